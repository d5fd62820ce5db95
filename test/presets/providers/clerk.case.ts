/**
 * Clerk: delivered through Svix (svix-* headers, whsec_ secret); Clerk's docs verify with the svix
 * package, which signs here too. https://clerk.com/docs/webhooks/sync-data
 */
import { Webhook } from 'svix';
import type { ProviderCase } from './provider-case.ts';
import { passes, signFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

export const clerkCase: ProviderCase = {
  preset: 'clerk',
  credential: 'secret',
  secret: `whsec_${Buffer.from('clerk signing secret, current').toString('base64')}`,
  wrongSecret: `whsec_${Buffer.from('clerk signing secret, wrong').toString('base64')}`,
  deliver: (secret, atMs) => signFamily('svix', secret, samplePayload('clerk-user-created.json'), atMs),
  accepts: ({ body, headers }, secret) => passes(() => new Webhook(secret).verify(body.toString('utf8'), headers)),
  timestamped: true,
  requiredHeader: 'svix-id',
  eventType: 'user.created',
  proof: 'package-signs',
};
