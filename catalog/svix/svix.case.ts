/**
 * Svix: svix-* headers, signed and checked by the svix package.
 * https://docs.svix.com/receiving/verifying-payloads/how-manual
 */
import { familyCase, svixVerifies } from '../../test/verify/providers/standard-webhooks-family.ts';

export const svixCase = familyCase({
  preset: 'svix',
  family: 'svix',
  sample: 'invoice-paid',
  requiredHeader: 'svix-signature',
  eventType: 'invoice.paid',
  verifier: svixVerifies,
});
