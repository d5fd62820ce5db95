/**
 * Paddle Billing: `ts=<unix>;h1=<hex HMAC-SHA256 of {ts}:{body}>`; @paddle/paddle-node-sdk's
 * isSignatureValid checks it (allowing 5 s of age, so it is shown fresh deliveries only).
 * https://developer.paddle.com/webhooks/signature-verification
 */
import { Paddle } from '@paddle/paddle-node-sdk';
import { hex, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

const paddle = new Paddle('pdl_sdbx_apikey_test');

export const paddleCase = hmacSchemeCase({
  preset: 'paddle',
  sample: 'transaction-completed',
  clock: unixSeconds,
  header: 'Paddle-Signature',
  eventType: 'transaction.completed',
  sign: (body, secret, ts) => ({ 'paddle-signature': `ts=${ts};h1=${hex(secret, `${ts}:`, body)}` }),
  verifier: ({ body, headers }, secret) =>
    paddle.webhooks.isSignatureValid(body.toString('utf8'), secret, headers['paddle-signature'] ?? ''),
});
