/**
 * WooCommerce: HMAC-SHA256 of the body, base64.
 * https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/woocommerce-order-created.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'base64');
}

export const woocommerceCase: ProviderCase = {
  preset: 'woocommerce',
  credential: 'secret',
  secret: 'woocommerce-signing-secret-current',
  wrongSecret: 'woocommerce-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-wc-webhook-topic': `order.created`,
        'x-wc-webhook-resource': `order`,
        'x-wc-webhook-event': `created`,
        'x-wc-webhook-delivery-id': `${randomUUID()}`,
        'x-wc-webhook-id': `12`,
        'x-wc-webhook-source': `https://shop.example.com/`,
        'x-wc-webhook-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-wc-webhook-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-WC-Webhook-Signature',
  eventType: 'order.created',
  proof: 'example',
};
