/**
 * Typeform: HMAC-SHA256 of the body, base64, `sha256=` prefix.
 * https://www.typeform.com/developers/webhooks/secure-your-webhooks/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/typeform-form-response.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `sha256=${hmac('sha256', secret, [body], 'base64')}`;
}

export const typeformCase: ProviderCase = {
  preset: 'typeform',
  credential: 'secret',
  secret: 'typeform-signing-secret-current',
  wrongSecret: 'typeform-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'typeform-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['typeform-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'Typeform-Signature',
  eventType: 'form_response',
  proof: 'example',
};
