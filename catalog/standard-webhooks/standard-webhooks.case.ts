/**
 * Standard Webhooks itself: webhook-* headers, signed and checked by the standardwebhooks package.
 * https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */
import { familyCase, standardVerifies } from '../../test/verify/providers/standard-webhooks-family.ts';

export const standardWebhooksCase = familyCase({
  preset: 'standard-webhooks',
  family: 'webhook',
  sample: 'invoice-paid',
  requiredHeader: 'webhook-signature',
  eventType: 'invoice.paid',
  verifier: standardVerifies,
});
