/**
 * CircleCI: HMAC-SHA256 of the body, hex, as a `v1=` item.
 * https://circleci.com/docs/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/circleci-workflow-completed.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `v1=${hmac('sha256', secret, [body], 'hex')}`;
}

export const circleciCase: ProviderCase = {
  preset: 'circleci',
  credential: 'secret',
  secret: 'circleci-signing-secret-current',
  wrongSecret: 'circleci-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'circleci-event-type': `workflow-completed`,
        'circleci-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['circleci-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'circleci-signature',
  eventType: 'workflow-completed',
  proof: 'example',
};
