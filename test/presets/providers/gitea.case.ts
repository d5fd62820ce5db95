/**
 * Gitea / Forgejo: HMAC-SHA256 of the body, hex, no prefix.
 * https://docs.gitea.com/usage/webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(new URL('../../../src/presets/samples/gitea-push.json', import.meta.url), 'utf8');

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const giteaCase: ProviderCase = {
  preset: 'gitea',
  credential: 'secret',
  secret: 'gitea-signing-secret-current',
  wrongSecret: 'gitea-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-gitea-event': `push`,
        'x-gitea-delivery': `${randomUUID()}`,
        'x-gitea-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-gitea-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Gitea-Signature',
  eventType: 'push',
  proof: 'example',
};
