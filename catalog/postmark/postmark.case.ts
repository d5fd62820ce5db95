/**
 * Postmark: the user name and password put in the webhook URL (https://user:password@…) arrive as
 * HTTP Basic. https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook
 */
import { basicCase } from '../../test/verify/providers/basic-case.ts';
import type { ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const postmarkCase: ProviderCase = {
  ...basicCase('postmark', () => samplePayload('postmark', 'delivery.json'), 'Delivery'),
  secret: 'postmark-webhook-password',
  wrongSecret: 'postmark-wrong-password',
};
