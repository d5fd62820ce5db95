/**
 * Razorpay: HMAC-SHA256 of the body, hex; razorpay verifies it.
 * https://razorpay.com/docs/webhooks/validate-test/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Razorpay from 'razorpay';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/razorpay-payment-captured.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const razorpayCase: ProviderCase = {
  preset: 'razorpay',
  credential: 'secret',
  secret: 'razorpay-signing-secret-current',
  wrongSecret: 'razorpay-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-razorpay-event-id': `${randomUUID()}`,
        'x-razorpay-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    return Razorpay.validateWebhookSignature(
      delivery.body.toString('utf8'),
      delivery.headers['x-razorpay-signature'] ?? '',
      secret,
    );
  },
  timestamped: false,
  requiredHeader: 'X-Razorpay-Signature',
  eventType: 'payment.captured',
  proof: 'package-verifies',
};
