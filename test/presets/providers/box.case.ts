/**
 * Box: BOX-SIGNATURE-PRIMARY / -SECONDARY, base64 HMAC-SHA256 of the body followed by
 * BOX-DELIVERY-TIMESTAMP, one per key. box-node-sdk verifies (WebhooksManager.validateMessage; it
 * does not sign), so switchboard's test signer passes it first.
 * https://developer.box.com/guides/webhooks/v2/signatures-v2/
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { isoSeconds, samplePayload } from './timed-case.ts';

interface BoxWebhooks {
  validateMessage(body: string, headers: Record<string, string>, primaryKey: string): Promise<boolean>;
}
const { WebhooksManager } = createRequire(import.meta.url)('box-node-sdk/lib/managers/webhooks') as {
  WebhooksManager: BoxWebhooks;
};

export const boxCase: ProviderCase = {
  preset: 'box',
  credential: 'secret',
  secret: 'box-primary-signature-key',
  wrongSecret: 'box-wrong-signature-key',
  deliver(secret, atMs) {
    const body = samplePayload('box-file-uploaded.json');
    const ts = isoSeconds(atMs);
    return jsonDelivery(body, {
      'box-delivery-id': randomUUID(),
      'box-delivery-timestamp': ts,
      'box-signature-version': '1',
      'box-signature-algorithm': 'HmacSHA256',
      'box-signature-primary': hmac('sha256', secret, [body, ts], 'base64'),
    });
  },
  async accepts({ body, headers }, secret) {
    return WebhooksManager.validateMessage(body.toString('utf8'), headers, secret);
  },
  timestamped: true,
  requiredHeader: 'BOX-SIGNATURE-PRIMARY',
  eventType: 'FILE.UPLOADED',
  proof: 'package-verifies',
};
