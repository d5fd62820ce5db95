/**
 * Replicate: Standard Webhooks (webhook-* headers, whsec_ secret) over the prediction object, which
 * carries no event type (switchboard names it prediction.<status>). The replicate package only
 * verifies (validateWebhook), so deliveries are signed by the standardwebhooks package.
 * https://replicate.com/docs/topics/webhooks/verify-webhook
 */
import { validateWebhook } from 'replicate';
import type { ProviderCase } from './provider-case.ts';
import { signFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

export const replicateCase: ProviderCase = {
  preset: 'replicate',
  credential: 'secret',
  secret: `whsec_${Buffer.from('replicate webhook key, current').toString('base64')}`,
  wrongSecret: `whsec_${Buffer.from('replicate webhook key, wrong').toString('base64')}`,
  deliver: (secret, atMs) => signFamily('webhook', secret, samplePayload('replicate-prediction-succeeded.json'), atMs),
  accepts: ({ body, headers }, secret) =>
    validateWebhook({
      id: headers['webhook-id'] ?? '',
      timestamp: headers['webhook-timestamp'] ?? '',
      signature: headers['webhook-signature'] ?? '',
      body: body.toString('utf8'),
      secret,
    }),
  timestamped: true,
  requiredHeader: 'webhook-id',
  eventType: 'prediction.succeeded',
  proof: 'package-verifies',
};
