/**
 * WorkOS: `t=<ms>, v1=<hex HMAC-SHA256 of {t}.{body}>`; @workos-inc/node's constructEvent checks it.
 * https://workos.com/docs/events/data-syncing/webhooks
 */
import { WorkOS } from '@workos-inc/node';
import { hex, hmacSchemeCase, msString } from '../../test/verify/providers/hmac-scheme-case.ts';

const workos = new WorkOS('sk_test_switchboard');

export const workosCase = hmacSchemeCase({
  preset: 'workos',
  sample: 'user-created',
  clock: msString,
  header: 'WorkOS-Signature',
  eventType: 'user.created',
  sign: (body, secret, t) => ({ 'workos-signature': `t=${t}, v1=${hex(secret, `${t}.`, body)}` }),
  async verifier({ body, headers }, secret) {
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
});
