/**
 * WorkOS: `WorkOS-Signature: t=<ms>, v1=<hex>`, HMAC-SHA256 of `{t}.{body}`. @workos-inc/node
 * verifies (constructEvent; it does not sign webhooks), so switchboard's test signer passes it first.
 * https://workos.com/docs/events/data-syncing/webhooks
 */
import { WorkOS } from '@workos-inc/node';
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

const workos = new WorkOS('sk_test_switchboard');

export const workosCase: ProviderCase = {
  preset: 'workos',
  credential: 'secret',
  secret: 'workos-webhook-secret-current',
  wrongSecret: 'workos-webhook-secret-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('workos-user-created.json');
    const t = String(Math.floor(atMs));
    return jsonDelivery(body, {
      'workos-signature': `t=${t}, v1=${hmac('sha256', secret, [`${t}.`, body], 'hex')}`,
    });
  },
  async accepts({ body, headers }, secret) {
    // WorkOS signs JSON.stringify of the parsed payload: the same bytes for a compact body.
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      return false;
    }
    return workos.webhooks.constructEvent({ payload, sigHeader: headers['workos-signature'] ?? '', secret }).then(
      () => true,
      () => false,
    );
  },
  timestamped: true,
  requiredHeader: 'WorkOS-Signature',
  eventType: 'user.created',
  proof: 'package-verifies',
};
