/**
 * Meta (Facebook, Instagram, WhatsApp): HMAC-SHA256 of the body with the app secret, hex, `sha256=` prefix.
 * https://developers.facebook.com/docs/graph-api/webhooks/getting-started
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/meta-whatsapp-business-account-messages.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `sha256=${hmac('sha256', secret, [body], 'hex')}`;
}

export const metaCase: ProviderCase = {
  preset: 'meta',
  credential: 'secret',
  secret: 'meta-signing-secret-current',
  wrongSecret: 'meta-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-hub-signature-256': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-hub-signature-256'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Hub-Signature-256',
  eventType: 'whatsapp_business_account.messages',
  proof: 'example',
};
