/**
 * Cal.com: HMAC-SHA256 of the body, hex.
 * https://cal.com/docs/developing/guides/automation/webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/cal-com-booking-created.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const calComCase: ProviderCase = {
  preset: 'cal-com',
  credential: 'secret',
  secret: 'cal-com-signing-secret-current',
  wrongSecret: 'cal-com-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-cal-signature-256': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-cal-signature-256'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Cal-Signature-256',
  eventType: 'BOOKING_CREATED',
  proof: 'example',
};
