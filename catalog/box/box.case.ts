/**
 * Box: base64 HMAC-SHA256 of the body, then the delivery timestamp, one signature per key (primary,
 * secondary); box-node-sdk's validateMessage checks it.
 * https://developer.box.com/guides/webhooks/v2/signatures-v2/
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { base64, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { isoSeconds } from '../../test/verify/providers/timed-case.ts';

// Only the helper is loaded: the whole SDK takes seconds to import.
const require = createRequire(import.meta.url);
const { WebhooksManager: box } = require('box-node-sdk/lib/managers/webhooks') as {
  WebhooksManager: {
    validateMessage(body: string, headers: Record<string, string>, primaryKey: string): Promise<boolean>;
  };
};

export const boxCase = hmacSchemeCase({
  preset: 'box',
  sample: 'file-uploaded',
  clock: isoSeconds,
  header: 'BOX-SIGNATURE-PRIMARY',
  eventType: 'FILE.UPLOADED',
  sign: (body, secret, at) => ({
    'box-delivery-id': randomUUID(),
    'box-delivery-timestamp': at,
    'box-signature-version': '1',
    'box-signature-algorithm': 'HmacSHA256',
    'box-signature-primary': base64(secret, body, at),
  }),
  verifier: ({ body, headers }, secret) => box.validateMessage(body.toString('utf8'), headers, secret),
});
