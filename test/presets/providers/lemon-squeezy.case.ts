/**
 * Lemon Squeezy: HMAC-SHA256 of the body, hex.
 * https://docs.lemonsqueezy.com/help/webhooks/signing-requests
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/lemon-squeezy-order-created.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const lemonSqueezyCase: ProviderCase = {
  preset: 'lemon-squeezy',
  credential: 'secret',
  secret: 'lemon-squeezy-signing-secret-current',
  wrongSecret: 'lemon-squeezy-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-event-name': `order_created`,
        'x-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Signature',
  eventType: 'order_created',
  proof: 'example',
};
