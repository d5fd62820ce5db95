/**
 * Segment (Twilio Segment): HMAC-SHA1 of the body with the shared secret, hex.
 * https://segment.com/docs/connections/destinations/catalog/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(new URL('../../../src/presets/samples/segment-track.json', import.meta.url), 'utf8');

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha1', secret, [body], 'hex');
}

export const segmentCase: ProviderCase = {
  preset: 'segment',
  credential: 'secret',
  secret: 'segment-signing-secret-current',
  wrongSecret: 'segment-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

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
  eventType: 'track',
  proof: 'example',
};
