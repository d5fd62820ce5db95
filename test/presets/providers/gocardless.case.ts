/**
 * GoCardless: HMAC-SHA256 of the body, hex; gocardless-nodejs verifies it.
 * https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { verifySignature } from 'gocardless-nodejs/webhooks';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/gocardless-payments-confirmed.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const gocardlessCase: ProviderCase = {
  preset: 'gocardless',
  credential: 'secret',
  secret: 'gocardless-signing-secret-current',
  wrongSecret: 'gocardless-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'webhook-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    try {
      verifySignature(delivery.body, secret, delivery.headers['webhook-signature'] ?? '');
      return true;
    } catch {
      return false;
    }
  },
  timestamped: false,
  requiredHeader: 'Webhook-Signature',
  eventType: 'payments.confirmed',
  proof: 'package-verifies',
};
