/**
 * Intercom: HMAC-SHA1 of the body with the client secret, hex, `sha1=` prefix.
 * https://developers.intercom.com/docs/references/webhooks/webhook-models
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/intercom-conversation-user-created.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `sha1=${hmac('sha1', secret, [body], 'hex')}`;
}

export const intercomCase: ProviderCase = {
  preset: 'intercom',
  credential: 'secret',
  secret: 'intercom-signing-secret-current',
  wrongSecret: 'intercom-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-hub-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-hub-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Hub-Signature',
  eventType: 'conversation.user.created',
  proof: 'example',
};
