/**
 * Signatures carried in the JSON body itself. Mailgun: `signature.signature`, hex HMAC-SHA256 with
 * the signing key of `signature.timestamp` + `signature.token` (the event data is not covered, and
 * the timestamp is held to tolerance_seconds). Adyen: each notification item's
 * `additionalData.hmacSignature`, base64 HMAC-SHA256 with the hex-decoded HMAC key of the item's
 * pspReference, originalReference, merchantAccountCode, merchantReference, amount value and
 * currency, eventCode and success joined by `:`; every item must pass. Neither can be re-signed
 * without rewriting the stored bytes, so replay sends the body as stored, its signature inside.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { BodySignatureScheme } from '../../../generated/types.ts';
import { usableSecrets } from '../hmac.ts';
import { MISSING_SECRET, rotationNote, signatureMismatch } from '../verdicts.ts';
import { isRecord } from '../identify.ts';
import { findMatchingKey } from '../timing-safe.ts';
import { floorToSecondMs, freshnessFailure, parseUnixSeconds } from '../timestamp.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import type { SchemeParts } from './hmac-scheme.ts';

const malformedBody = (detail: string): VerifyOutcome => ({ ok: false, reason: 'malformed_header', detail });
const missingInBody = (detail: string): VerifyOutcome => ({ ok: false, reason: 'missing_header', detail });

function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

function passed(kind: string, index: number, count: number): Extract<VerifyOutcome, { ok: true }> {
  const rotation = rotationNote('secret', index, count);
  return { ok: true, detail: `hmac-sha256 valid (${kind})${rotation}` };
}

function verifyMailgun(input: VerifyInput, keys: string[]): VerifyOutcome {
  const json = jsonOf(input.body);
  let fields: { timestamp?: string | undefined; token?: string | undefined; signature?: string | undefined } = {};
  if (isRecord(json) && isRecord(json['signature'])) {
    const s = json['signature'];
    fields = { timestamp: text(s['timestamp']), token: text(s['token']), signature: text(s['signature']) };
  } else if (json === undefined) {
    // Mailgun's legacy webhooks post form fields of the same names.
    const form = new URLSearchParams(input.body.toString('utf8'));
    fields = {
      timestamp: form.get('timestamp') ?? undefined,
      token: form.get('token') ?? undefined,
      signature: form.get('signature') ?? undefined,
    };
  }
  const { timestamp, token, signature } = fields;
  if (timestamp === undefined || token === undefined || signature === undefined) {
    return missingInBody('no signature.timestamp, signature.token and signature.signature in the body');
  }
  const seconds = parseUnixSeconds(timestamp);
  if (seconds === null) return malformedBody('malformed signature.timestamp in the body (expected unix seconds)');
  const index = findMatchingKey(keys, [signature.toLowerCase()], (key) =>
    createHmac('sha256', key).update(timestamp).update(token).digest('hex'),
  );
  if (index === -1) return signatureMismatch('body signature');
  // Mailgun signs timestamp + token, not the event data: the token is single-use while the
  // signature is fresh, or one signature would vouch for any body (ingest claims it).
  const nonce = { token, expiresAtMs: (seconds + input.toleranceSeconds) * 1000 };
  const ok: VerifyOutcome = { ...passed('body signature', index, keys.length), nonce };
  const stale = freshnessFailure(
    seconds * 1000,
    floorToSecondMs(input.nowMs),
    input.toleranceSeconds,
    'body signature.timestamp',
  );
  return stale ?? ok;
}

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

function verifyAdyen(input: VerifyInput, secrets: string[]): VerifyOutcome {
  const keys = secrets.filter((s) => /^(?:[0-9a-fA-F]{2})+$/.test(s)).map((s) => Buffer.from(s, 'hex'));
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

/**
 * The body with a fresh signature inside, as the provider would send it (trigger's samples): a new
 * timestamp and token for Mailgun, each item's hmacSignature for Adyen. A body that is not such a
 * document is returned unchanged.
 */
function signBody(adyen: boolean, input: SignInput): Buffer {
  const json = jsonOf(input.body);
  if (!isRecord(json)) return input.body;
  if (adyen) {
    const key = Buffer.from(input.secret, 'hex');
    const items = Array.isArray(json['notificationItems']) ? json['notificationItems'] : [];
    for (const wrapped of items) {
      const item = isRecord(wrapped) ? wrapped['NotificationRequestItem'] : undefined;
      if (!isRecord(item)) continue;
      const extra = isRecord(item['additionalData']) ? item['additionalData'] : {};
      extra['hmacSignature'] = createHmac('sha256', key).update(adyenSigned(item)).digest('base64');
      item['additionalData'] = extra;
    }
  } else {
    const timestamp = String(Math.floor(input.nowMs / 1000));
    const token = randomBytes(25).toString('hex');
    const signature = createHmac('sha256', input.secret).update(timestamp).update(token).digest('hex');
    json['signature'] = { timestamp, token, signature };
  }
  return Buffer.from(JSON.stringify(json), 'utf8');
}

export function createBodySignatureScheme(scheme: BodySignatureScheme): Omit<SchemeParts, 'sign'> & {
  checkCredential?: (value: string) => string | null;
  signBody: (input: SignInput) => Buffer;
  readsSignatureFromBody: true;
} {
  const adyen = scheme.variant === 'adyen';
  return {
    requiredHeaders: [],
    sensitiveHeaders: [],
    verify: (input) => {
      const keys = usableSecrets(input.secrets);
      if (keys.length === 0) return MISSING_SECRET;
      return adyen ? verifyAdyen(input, keys) : verifyMailgun(input, keys);
    },
    signBody: (input) => signBody(adyen, input),
    readsSignatureFromBody: true,
    ...(adyen
      ? {
          checkCredential: (value: string) =>
            /^(?:[0-9a-fA-F]{2})+$/.test(value) ? null : 'an Adyen HMAC key is hex (as the Customer Area shows it)',
        }
      : {}),
  };
}
