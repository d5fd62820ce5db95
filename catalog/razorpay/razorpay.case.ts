/**
 * Razorpay: an HMAC of the raw body alone in X-Razorpay-Signature, no timestamp; checked by
 * razorpay's own verifier. https://razorpay.com/docs/webhooks/validate-test/
 */
import { randomUUID } from 'node:crypto';
import Razorpay from 'razorpay';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const razorpayCase = bodyHmacCase({
  preset: 'razorpay',
  sample: 'payment-captured',
  header: 'X-Razorpay-Signature',
  written: '<hex sha256>',
  eventType: 'payment.captured',
  otherHeaders: () => ({ 'x-razorpay-event-id': randomUUID() }),
  verifier: (body, signature, secret) => Razorpay.validateWebhookSignature(body.toString('utf8'), signature, secret),
});
