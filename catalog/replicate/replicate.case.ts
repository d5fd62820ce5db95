/**
 * Replicate: webhook-* headers, signed by standardwebhooks and checked by the replicate package's
 * validateWebhook. The prediction carries no event type: switchboard names it prediction.<status>.
 * https://replicate.com/docs/topics/webhooks/verify-webhook
 */
import { validateWebhook } from 'replicate';
import { familyCase } from '../../test/verify/providers/standard-webhooks-family.ts';

export const replicateCase = familyCase({
  preset: 'replicate',
  family: 'webhook',
  sample: 'prediction-succeeded',
  requiredHeader: 'webhook-id',
  eventType: 'prediction.succeeded',
  verifier: ({ body, headers }, secret) =>
    validateWebhook({
      id: headers['webhook-id'] ?? '',
      timestamp: headers['webhook-timestamp'] ?? '',
      signature: headers['webhook-signature'] ?? '',
      body: body.toString('utf8'),
      secret,
    }),
});
