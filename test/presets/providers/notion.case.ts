/**
 * Notion: HMAC-SHA256 of the body with the verification token, hex, `sha256=` prefix.
 * https://developers.notion.com/reference/webhooks
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(new URL('../../../src/presets/samples/notion-page-created.json', import.meta.url), 'utf8');

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `sha256=${hmac('sha256', secret, [body], 'hex')}`;
}

export const notionCase: ProviderCase = {
  preset: 'notion',
  credential: 'secret',
  secret: 'notion-signing-secret-current',
  wrongSecret: 'notion-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',

        'x-notion-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-notion-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Notion-Signature',
  eventType: 'page.created',
  proof: 'example',
};
