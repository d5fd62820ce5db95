/**
 * Vercel: HMAC-SHA1 of the body with the client secret, hex.
 * https://vercel.com/docs/webhooks/webhooks-api
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/vercel-deployment-succeeded.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha1', secret, [body], 'hex');
}

export const vercelCase: ProviderCase = {
  preset: 'vercel',
  credential: 'secret',
  secret: 'vercel-signing-secret-current',
  wrongSecret: 'vercel-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-vercel-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-vercel-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'x-vercel-signature',
  eventType: 'deployment.succeeded',
  proof: 'example',
};
