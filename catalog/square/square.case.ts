/**
 * Square: base64 HMAC-SHA256 of the notification URL, then the body; no timestamp. The square
 * package's WebhooksHelper checks it.
 * https://developer.squareup.com/docs/webhooks/step3validate
 */
import { base64, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { square } from '../../test/verify/providers/square-helper.ts';

export const squareCase = hmacSchemeCase({
  preset: 'square',
  sample: 'payment-created',
  clock: null,
  header: 'x-square-hmacsha256-signature',
  eventType: 'payment.created',
  sign: (body, secret, _at, url) => ({ 'x-square-hmacsha256-signature': base64(secret, url, body) }),
  verifier: ({ body, headers }, signatureKey, notificationUrl) =>
    square.verifySignature({
      requestBody: body.toString('utf8'),
      signatureHeader: headers['x-square-hmacsha256-signature'] ?? '',
      signatureKey,
      notificationUrl,
    }),
  signsUrl: true,
});
