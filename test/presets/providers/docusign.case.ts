/**
 * DocuSign Connect: HMAC-SHA256 of the body, base64, one header per key.
 * https://developers.docusign.com/platform/webhooks/connect/hmac/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/docusign-envelope-completed.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'base64');
}

export const docusignCase: ProviderCase = {
  preset: 'docusign',
  credential: 'secret',
  secret: 'docusign-signing-secret-current',
  wrongSecret: 'docusign-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-docusign-signature-1': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-docusign-signature-1'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-DocuSign-Signature-1',
  eventType: 'envelope-completed',
  proof: 'example',
};
