/**
 * Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>`, HMAC-SHA256 of `{ts}:{body}`.
 * @paddle/paddle-node-sdk verifies (it does not sign), so switchboard's test signer is shown to
 * pass it first. Paddle's verifier allows 5 s of age, so it is shown fresh deliveries only.
 * https://developer.paddle.com/webhooks/signature-verification
 */
import { Paddle } from '@paddle/paddle-node-sdk';
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

const paddle = new Paddle('pdl_sdbx_apikey_test');

export const paddleCase: ProviderCase = {
  preset: 'paddle',
  credential: 'secret',
  secret: 'pdl_ntfset_current_secret',
  wrongSecret: 'pdl_ntfset_wrong_secret',
  deliver(secret, atMs) {
    const body = samplePayload('paddle-transaction-completed.json');
    const ts = unixSeconds(atMs);
    return jsonDelivery(body, {
      'paddle-signature': `ts=${ts};h1=${hmac('sha256', secret, [`${ts}:`, body], 'hex')}`,
    });
  },
  async accepts({ body, headers }, secret) {
    return paddle.webhooks.isSignatureValid(body.toString('utf8'), secret, headers['paddle-signature'] ?? '');
  },
  timestamped: true,
  requiredHeader: 'Paddle-Signature',
  eventType: 'transaction.completed',
  proof: 'package-verifies',
};
