/**
 * Coinbase Commerce: HMAC-SHA256 of the body with the shared secret, hex; coinbase-commerce-node verifies it.
 * https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import coinbase from 'coinbase-commerce-node';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/coinbase-commerce-charge-confirmed.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const coinbaseCommerceCase: ProviderCase = {
  preset: 'coinbase-commerce',
  credential: 'secret',
  secret: 'coinbase-commerce-signing-secret-current',
  wrongSecret: 'coinbase-commerce-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-cc-webhook-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    try {
      return coinbase.Webhook.verifySigHeader(
        delivery.body.toString('utf8'),
        delivery.headers['x-cc-webhook-signature'] ?? '',
        secret,
      );
    } catch {
      return false;
    }
  },
  timestamped: false,
  requiredHeader: 'X-CC-Webhook-Signature',
  eventType: 'charge:confirmed',
  proof: 'package-verifies',
};
