/**
 * Sentry: HMAC-SHA256 of the body with the client secret, hex.
 * https://docs.sentry.io/organization/integrations/integration-platform/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(new URL('../../../src/presets/samples/sentry-issue-created.json', import.meta.url), 'utf8');

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return hmac('sha256', secret, [body], 'hex');
}

export const sentryCase: ProviderCase = {
  preset: 'sentry',
  credential: 'secret',
  secret: 'sentry-signing-secret-current',
  wrongSecret: 'sentry-signing-secret-wrong',
  deliver(secret, atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'sentry-hook-resource': `issue`,
        'sentry-hook-timestamp': `${Math.floor(atMs / 1000)}`,
        'request-id': `${randomUUID()}`,
        'sentry-hook-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['sentry-hook-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'Sentry-Hook-Signature',
  eventType: 'issue.created',
  proof: 'example',
};
