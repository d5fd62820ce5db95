/**
 * Gitea (and Forgejo): an HMAC of the raw body alone in X-Gitea-Signature, no timestamp; checked by
 * the documented comparison. https://docs.gitea.com/usage/webhooks
 */
import { randomUUID } from 'node:crypto';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const giteaCase = bodyHmacCase({
  preset: 'gitea',
  sample: 'push',
  header: 'X-Gitea-Signature',
  written: '<hex sha256>',
  eventType: 'push',
  otherHeaders: () => ({ 'x-gitea-event': 'push', 'x-gitea-delivery': randomUUID() }),
});
