/**
 * Adyen: each notification item's `additionalData.hmacSignature`, base64 HMAC-SHA256 with the
 * hex-decoded HMAC key of the item's pspReference, originalReference, merchantAccountCode,
 * merchantReference, amount value and currency, eventCode and success joined by `:`; every item
 * must pass. The hex keys are decoded once per preset (schemes/keys.ts).
 */
import { createHmac } from 'node:crypto';
import { isRecord } from '../identify.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { jsonOf, passed, text } from '../schemes/body-signature-scheme.ts';
import { DecodedKeys } from '../schemes/keys.ts';
import { findMatchingKey } from '../timing-safe.ts';
import { MISSING_SECRET, malformedBody, missingInBody, signatureMismatch } from '../verdicts.ts';
import { defineEngine } from './engine.ts';

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** What Adyen signs of one notification item (the HmacValidator's order). */
function adyenSigned(item: Record<string, unknown>): string {
  const amount = isRecord(item['amount']) ? item['amount'] : {};
  return [
    item['pspReference'],
    item['originalReference'],
    item['merchantAccountCode'],
    item['merchantReference'],
    amount['value'],
    amount['currency'],
    item['eventCode'],
    item['success'],
  ]
    .map((v) => text(v) ?? '')
    .join(':');
}

function verifyAdyen(input: VerifyInput, decoded: DecodedKeys<Buffer>): VerifyOutcome {
  const keys = decoded.usable(input.secrets);
  if (keys.length === 0) return MISSING_SECRET;
  const json = jsonOf(input.body);
  const items = isRecord(json) && Array.isArray(json['notificationItems']) ? json['notificationItems'] : undefined;
  if (items === undefined || items.length === 0) return missingInBody('no notificationItems in the body');
  let index = -1;
  for (const [n, wrapped] of items.entries()) {
    const item = isRecord(wrapped) ? wrapped['NotificationRequestItem'] : undefined;
    if (!isRecord(item)) return malformedBody(`notificationItems/${n} is not a NotificationRequestItem`);
    const extra = isRecord(item['additionalData']) ? item['additionalData'] : {};
    const signature = text(extra['hmacSignature']);
    if (signature === undefined) return missingInBody(`no additionalData.hmacSignature in notificationItems/${n}`);
    const data = adyenSigned(item);
    const matched = findMatchingKey(keys, [signature], (key) =>
      createHmac('sha256', key).update(data).digest('base64'),
    );
    if (matched === -1) {
      return signatureMismatch(`notificationItems/${n} hmacSignature`);
    }
    if (index === -1) index = matched;
  }
  return passed('notification items hmacSignature', index, keys.length);
}

/** The body with each item's hmacSignature made afresh, as Adyen sends it (trigger's samples). */
function signAdyen(input: SignInput, decoded: DecodedKeys<Buffer>): Buffer {
  const json = jsonOf(input.body);
  const key = decoded.get(input.secret);
  if (!isRecord(json) || key === null) return input.body;
  const items = Array.isArray(json['notificationItems']) ? json['notificationItems'] : [];
  for (const wrapped of items) {
    const item = isRecord(wrapped) ? wrapped['NotificationRequestItem'] : undefined;
    if (!isRecord(item)) continue;
    const extra = isRecord(item['additionalData']) ? item['additionalData'] : {};
    extra['hmacSignature'] = createHmac('sha256', key).update(adyenSigned(item)).digest('base64');
    item['additionalData'] = extra;
  }
  return Buffer.from(JSON.stringify(json), 'utf8');
}

export const adyenHmacEngine = defineEngine<'adyen-hmac'>({
  kind: 'adyen-hmac',
  build: () => {
    const decoded = new DecodedKeys((secret) => (HEX.test(secret) ? Buffer.from(secret, 'hex') : null));
    return {
      requiredHeaders: [],
      sensitiveHeaders: [],
      verify: (input) => verifyAdyen(input, decoded),
      signBody: (input) => signAdyen(input, decoded),
      readsSignatureFromBody: true,
      checkCredential: (value) => (HEX.test(value) ? null : 'an Adyen HMAC key is hex (as the Customer Area shows it)'),
    };
  },
  docs: {
    scheme: () => 'HMAC-SHA256 base64 per notification item (in the body), hex-decoded key',
    headers: () => 'body `additionalData.hmacSignature`',
    timestamped: () => false,
  },
});
