/**
 * PagerDuty: HMAC-SHA256 of the body, hex, a list of `v1=` items.
 * https://developer.pagerduty.com/docs/webhooks/webhook-signatures
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/pagerduty-incident-triggered.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `v1=${hmac('sha256', secret, [body], 'hex')}`;
}

export const pagerdutyCase: ProviderCase = {
  preset: 'pagerduty',
  credential: 'secret',
  secret: 'pagerduty-signing-secret-current',
  wrongSecret: 'pagerduty-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-webhook-subscription': `PS1234`,
        'x-pagerduty-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-pagerduty-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-PagerDuty-Signature',
  eventType: 'incident.triggered',
  proof: 'example',
};
