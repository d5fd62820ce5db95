import {
  compareSha256,
  hmacEncoded,
  isOutcome,
  malformedHeader,
  normaliseHex,
  readSignature,
  signedPreset,
} from './hmac.ts';
import { asIdentifier, isRecord, LazyBody } from './identify.ts';
import { freshSignature, parseUnixSeconds } from './timestamp.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { at, money, summaryLine } from './summary.ts';

const SIGNATURE_HEADER = 'Stripe-Signature';
const EXPECTED_FORMAT = 't=<unix>,v1=<hex>';

interface StripeHeader {
  timestamp: string;
  signatures: string[];
}

/**
 * `t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]`. Several v1 entries appear while Stripe rolls an endpoint
 * secret; v0 (test-mode legacy) and unknown schemes are ignored, as Stripe's own library does.
 */
function parseStripeHeader(value: string): StripeHeader | null {
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const item of value.split(',')) {
    const eq = item.indexOf('=');
    if (eq === -1) continue;
    const key = item.slice(0, eq).trim();
    const val = item.slice(eq + 1).trim();
    if (key === 't') timestamp = val;
    else if (key === 'v1' && val !== '') signatures.push(normaliseHex(val));
  }
  if (timestamp === undefined || signatures.length === 0) return null;
  return { timestamp, signatures };
}

/**
 * Stripe: HMAC-SHA256 hex of `${t}.${body}`, keyed by the `whsec_…` secret exactly as shown in the
 * dashboard (it is not decoded). The signature is checked before the timestamp so that "stale" is
 * only ever reported for a delivery Stripe really signed.
 */
export function verifyStripe(input: VerifyInput): VerifyOutcome {
  const signature = readSignature(input, SIGNATURE_HEADER);
  if (isOutcome(signature)) return signature;
  const parsed = parseStripeHeader(signature.value);
  if (parsed === null) return malformedHeader(SIGNATURE_HEADER, EXPECTED_FORMAT);
  const seconds = parseUnixSeconds(parsed.timestamp);
  if (seconds === null) return malformedHeader(SIGNATURE_HEADER, EXPECTED_FORMAT);
  const parts = [`${seconds}.`, input.body];
  const outcome = compareSha256(SIGNATURE_HEADER, signature.secrets, parsed.signatures, parts, 'hex');
  return freshSignature(outcome, seconds, input, `${SIGNATURE_HEADER} t`);
}

export function signStripe(input: SignInput): Record<string, string> {
  const timestamp = String(Math.floor(input.nowMs / 1000));
  const signature = hmacEncoded('sha256', input.secret, [`${timestamp}.`, input.body], 'hex');
  return { 'stripe-signature': `t=${timestamp},v1=${signature}` };
}

/** Event objects carry their own type (`payment_intent.succeeded`) and id (`evt_…`). */
export function identifyStripe(body: Buffer, _headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  if (!isRecord(json)) return { eventType: 'unknown', externalId: null };
  return { eventType: asIdentifier(json['type']) ?? 'unknown', externalId: asIdentifier(json['id']) };
}

// The amount fields Stripe objects carry, most telling first (a payment intent's amount, a
// checkout session's total, an invoice's amount paid or due).
const AMOUNT_FIELDS = ['amount', 'amount_total', 'amount_paid', 'amount_due'] as const;

/** The object the event is about: its type and id, and its amount where it has one. */
export function summarizeStripe(body: DeliveryBody): string | null {
  const object = at(body.json, 'data', 'object');
  if (!isRecord(object)) return null;
  const amountField = AMOUNT_FIELDS.find((field) => typeof object[field] === 'number');
  return summaryLine([
    object['object'],
    object['id'],
    amountField === undefined ? null : money(object[amountField], object['currency']),
  ]);
}

export const stripePreset = signedPreset(
  'stripe',
  { requiredHeaders: ['stripe-signature'], sensitiveHeaders: ['stripe-signature'] },
  { verify: verifyStripe, sign: signStripe, identify: identifyStripe, summarize: summarizeStripe },
);
