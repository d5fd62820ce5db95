import { headerValue } from './headers.ts';
import { compareSha256, hmacEncoded, isOutcome, normaliseHex, readSignature, signedPreset } from './hmac.ts';
import { asIdentifier, isRecord, LazyBody, parseJsonBody } from './identify.ts';
import { freshnessFailure } from './timestamp.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { at, firstLine, summaryLine } from './summary.ts';

const SIGNATURE_HEADER = 'Linear-Signature';
const TIMESTAMP_FIELD = 'webhookTimestamp';

/** Milliseconds since the epoch, as Linear writes it (a JSON number; a digit string is tolerated). */
function bodyTimestampMs(body: Buffer): number | null {
  const json = parseJsonBody(body);
  if (!isRecord(json)) return null;
  const value = json[TIMESTAMP_FIELD];
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  return null;
}

/**
 * Linear: hex HMAC-SHA256 of the raw body in Linear-Signature. The timestamp is not a header but
 * the body's `webhookTimestamp` (ms); it is covered by the signature because the body is, so it is
 * read only after the signature passed. A signed body without a usable timestamp is rejected:
 * Linear always sends one, and without it the delivery could be replayed indefinitely.
 */
export function verifyLinear(input: VerifyInput): VerifyOutcome {
  const signature = readSignature(input, SIGNATURE_HEADER);
  if (isOutcome(signature)) return signature;
  const candidate = normaliseHex(signature.value);
  const outcome = compareSha256(SIGNATURE_HEADER, signature.secrets, [candidate], [input.body], 'hex');
  if (!outcome.ok) return outcome;
  const timestampMs = bodyTimestampMs(input.body);
  if (timestampMs === null) {
    return {
      ok: false,
      reason: 'stale_timestamp',
      detail: `${TIMESTAMP_FIELD} missing from body; freshness unverifiable`,
    };
  }
  return freshnessFailure(timestampMs, input.nowMs, input.toleranceSeconds, `body ${TIMESTAMP_FIELD}`) ?? outcome;
}

/**
 * Only the signature header can be produced: the timestamp lives inside the body, and the stored
 * bytes are replayed exactly, so a replay older than the receiver's tolerance will be judged stale
 * by a receiver that checks webhookTimestamp (this preset included).
 */
export function signLinear(input: SignInput): Record<string, string> {
  return { 'linear-signature': hmacEncoded('sha256', input.secret, [input.body], 'hex') };
}

/**
 * `Issue.create` style from the body's `type` and `action`. The external id is the
 * Linear-Delivery header (one per delivery); the body's `webhookId` names the webhook
 * subscription and is the same for every delivery, so it would make every event look like a
 * duplicate.
 */
export function identifyLinear(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  const type = isRecord(json) ? asIdentifier(json['type']) : null;
  const action = isRecord(json) ? asIdentifier(json['action']) : null;
  const eventType = type === null ? 'unknown' : action === null ? type : `${type}.${action}`;
  return { eventType, externalId: asIdentifier(headerValue(headers, 'linear-delivery')) };
}

/** The issue (or other entity) by its identifier and title, e.g. `ENG-123 · Checkout fails`. */
export function summarizeLinear(body: DeliveryBody): string | null {
  const data = at(body.json, 'data');
  if (!isRecord(data)) return null;
  return summaryLine([data['identifier'], data['title'] ?? data['name'] ?? firstLine(data['body'])]);
}

export const linearPreset = signedPreset(
  'linear',
  { requiredHeaders: ['linear-signature'], sensitiveHeaders: ['linear-signature'] },
  { verify: verifyLinear, sign: signLinear, identify: identifyLinear, summarize: summarizeLinear },
);
