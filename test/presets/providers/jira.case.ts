/**
 * Jira Cloud: HMAC-SHA256 of the body, hex, `sha256=` prefix.
 * https://developer.atlassian.com/cloud/jira/platform/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hmac, type ProviderCase, type Signed } from './provider-case.ts';

const SAMPLE = readFileSync(
  new URL('../../../src/presets/samples/jira-jira-issue-created.json', import.meta.url),
  'utf8',
);

/** The sample as sent, its ids made fresh so each delivery is a new event. */
function payload(): Buffer {
  return Buffer.from(JSON.stringify({ ...(JSON.parse(SAMPLE) as object), delivered: randomUUID() }));
}

function sign(body: Buffer, secret: string): string {
  return `sha256=${hmac('sha256', secret, [body], 'hex')}`;
}

export const jiraCase: ProviderCase = {
  preset: 'jira',
  credential: 'secret',
  secret: 'jira-signing-secret-current',
  wrongSecret: 'jira-signing-secret-wrong',
  deliver(secret, _atMs): Signed {
    const body = payload();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-atlassian-webhook-identifier': `${randomUUID()}`,
        'x-hub-signature': sign(body, secret),
      },
    };
  },
  accepts(delivery, secret) {
    // Computed from the provider's documentation, independently of src/presets.
    const sent = delivery.headers['x-hub-signature'];
    return sent === sign(delivery.body, secret);
  },
  timestamped: false,
  requiredHeader: 'X-Hub-Signature',
  eventType: 'jira:issue_created',
  proof: 'example',
};
