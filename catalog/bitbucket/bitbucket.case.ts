/**
 * Bitbucket: an HMAC of the raw body alone in X-Hub-Signature, no timestamp; checked by the
 * documented comparison. https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/
 */
import { randomUUID } from 'node:crypto';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const bitbucketCase = bodyHmacCase({
  preset: 'bitbucket',
  sample: 'repo-push',
  header: 'X-Hub-Signature',
  written: 'sha256=<hex sha256>',
  eventType: 'repo:push',
  otherHeaders: () => ({ 'x-event-key': 'repo:push', 'x-request-uuid': randomUUID(), 'x-hook-uuid': randomUUID() }),
});
