/**
 * Svix: svix-id, svix-timestamp, svix-signature `v1,<base64>`; the svix package signs and verifies.
 * https://docs.svix.com/receiving/verifying-payloads/how-manual
 */
import { Webhook } from 'svix';
import type { ProviderCase } from './provider-case.ts';
import { passes, signFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

export const svixCase: ProviderCase = {
  preset: 'svix',
  credential: 'secret',
  secret: `whsec_${Buffer.from('svix endpoint secret, current one').toString('base64')}`,
  wrongSecret: `whsec_${Buffer.from('svix endpoint secret, a wrong one').toString('base64')}`,
  deliver: (secret, atMs) => signFamily('svix', secret, samplePayload('svix-invoice-paid.json'), atMs),
  accepts: ({ body, headers }, secret) => passes(() => new Webhook(secret).verify(body.toString('utf8'), headers)),
  timestamped: true,
  requiredHeader: 'svix-signature',
  eventType: 'invoice.paid',
  proof: 'package-signs',
};
