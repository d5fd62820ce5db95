/**
 * Sanity: `sanity-webhook-signature: t=<ms>,v1=<base64url>`, HMAC-SHA256 of `{t}.{body}`.
 * @sanity/webhook signs (encodeSignatureHeader) and verifies (isValidSignature).
 * https://www.sanity.io/docs/webhooks
 */
import { randomUUID } from 'node:crypto';
import { encodeSignatureHeader, isValidSignature } from '@sanity/webhook';
import { jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const sanityCase: ProviderCase = {
  preset: 'sanity',
  ...sharedSecret('sanity-webhook-secret'),
  async deliver(secret, atMs) {
    const body = samplePayload('sanity', 'post-create.json');
    return jsonDelivery(body, {
      'sanity-operation': 'create',
      'idempotency-key': randomUUID(),
      'sanity-webhook-signature': await encodeSignatureHeader(body.toString('utf8'), Math.floor(atMs), secret),
    });
  },
  async accepts({ body, headers }, secret) {
    return isValidSignature(body.toString('utf8'), headers['sanity-webhook-signature'] ?? '', secret);
  },
  timestamped: true,
  requiredHeader: 'sanity-webhook-signature',
  eventType: 'post.create',
  proof: 'package-signs',
};
