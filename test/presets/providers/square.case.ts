/**
 * Square: `x-square-hmacsha256-signature`, base64 HMAC-SHA256 of the notification URL followed by
 * the body. square verifies (WebhooksHelper.verifySignature), so switchboard's test signer passes
 * it first. Only the helper is loaded: the whole SDK takes seconds to import.
 * https://developer.squareup.com/docs/webhooks/step3validate
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { hmac, jsonDelivery, type ProviderCase, PUBLIC_URL } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

interface Helper {
  verifySignature(input: {
    requestBody: string;
    signatureHeader: string;
    signatureKey: string;
    notificationUrl: string;
  }): Promise<boolean>;
}
const require = createRequire(import.meta.url);
const { WebhooksHelper } = require(join(dirname(require.resolve('square')), 'wrapper/WebhooksHelper.js')) as {
  WebhooksHelper: Helper;
};

const URL = `${PUBLIC_URL}square`;

export const squareCase: ProviderCase = {
  preset: 'square',
  config: { public_url: URL },
  credential: 'secret',
  secret: 'square-signature-key-current',
  wrongSecret: 'square-signature-key-wrong',
  deliver(secret) {
    const body = samplePayload('square-payment-created.json');
    return jsonDelivery(body, {
      'x-square-hmacsha256-signature': hmac('sha256', secret, [URL, body], 'base64'),
    });
  },
  accepts({ body, headers }, secret) {
    return WebhooksHelper.verifySignature({
      requestBody: body.toString('utf8'),
      signatureHeader: headers['x-square-hmacsha256-signature'] ?? '',
      signatureKey: secret,
      notificationUrl: URL,
    });
  },
  timestamped: false,
  requiredHeader: 'x-square-hmacsha256-signature',
  eventType: 'payment.created',
  proof: 'package-verifies',
};
