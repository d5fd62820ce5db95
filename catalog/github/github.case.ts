/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body; nothing time-related is
 * signed. @octokit/webhooks-methods signs and verifies, so both sides of the case are GitHub's own
 * code. https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
import { randomUUID } from 'node:crypto';
import { sign, verify } from '@octokit/webhooks-methods';
import { jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const githubCase: ProviderCase = {
  preset: 'github',
  ...sharedSecret('github-webhook-secret'),
  deliver: async (secret) => {
    const body = samplePayload('github', 'push.json');
    return jsonDelivery(body, {
      'x-hub-signature-256': await sign(secret, body.toString('utf8')),
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'user-agent': 'GitHub-Hookshot/switchboard',
    });
  },
  accepts: async ({ body, headers }, secret) => {
    try {
      return await verify(secret, body.toString('utf8'), headers['x-hub-signature-256'] ?? '');
    } catch {
      return false;
    }
  },
  timestamped: false,
  requiredHeader: 'X-Hub-Signature-256',
  eventType: 'push',
  proof: 'package-signs',
};
