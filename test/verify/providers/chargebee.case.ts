/**
 * Chargebee: the webhook's basic-authentication user name and password arrive as HTTP Basic.
 * https://www.chargebee.com/docs/2.0/webhook_settings.html#basic-authentication
 */
import { basicCase } from './basic-case.ts';
import type { ProviderCase } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

export const chargebeeCase: ProviderCase = {
  ...basicCase('chargebee', () => samplePayload('chargebee', 'subscription-created.json'), 'subscription_created'),
  secret: 'chargebee-webhook-password',
  wrongSecret: 'chargebee-wrong-password',
};
