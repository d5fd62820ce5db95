/**
 * Dropbox: HMAC-SHA256 of the body with the app secret, hex.
 * https://www.dropbox.com/developers/reference/webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(new URL('../../../src/presets/samples/dropbox-list-folder.json', import.meta.url), 'utf8');

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const dropboxCase: ProviderCase = {
  preset: 'dropbox',
  credential: 'secret',
  secret: 'dropbox-signing-secret-current',
  wrongSecret: 'dropbox-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-dropbox-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-dropbox-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Dropbox-Signature',
  eventType: 'list_folder',
  proof: 'example',
};
