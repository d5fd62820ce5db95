/**
 * Clerk: delivered through Svix (svix-* headers); Clerk's docs verify with the svix package.
 * https://clerk.com/docs/webhooks/sync-data
 */
import { familyCase, svixVerifies } from '../../test/verify/providers/standard-webhooks-family.ts';

export const clerkCase = familyCase({
  preset: 'clerk',
  family: 'svix',
  sample: 'user-created',
  requiredHeader: 'svix-id',
  eventType: 'user.created',
  verifier: svixVerifies,
});
