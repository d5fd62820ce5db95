/**
 * Chargebee: the webhook's basic-authentication user name and password arrive as HTTP Basic.
 * https://www.chargebee.com/docs/2.0/webhook_settings.html#basic-authentication
 */
import { basicCase } from '../../test/verify/providers/basic-case.ts';
import type { ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const chargebeeCase: ProviderCase = {
  ...basicCase('chargebee', () => samplePayload('chargebee', 'subscription-created.json'), 'subscription_created'),
  secret: 'chargebee-webhook-password',
  wrongSecret: 'chargebee-wrong-password',
};
