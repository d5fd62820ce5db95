import { headerValue } from './headers.ts';
import {
  compareSignatures,
  hmacEncoded,
  malformedHeader,
  missingHeader,
  MISSING_SECRET,
  normaliseHex,
  usableSecrets,
} from './hmac.ts';
import { asIdentifier, isRecord, parseJsonBody } from './identify.ts';
import { floorToSecondMs, freshnessFailure, parseUnixSeconds } from './timestamp.ts';
import type { EventIdentity, HeaderBag, Preset, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';

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
  const secrets = usableSecrets(input.secrets);
  if (secrets.length === 0) return MISSING_SECRET;
  const header = headerValue(input.headers, SIGNATURE_HEADER);
  if (header === undefined) return missingHeader(SIGNATURE_HEADER);
  const parsed = parseStripeHeader(header);
  if (parsed === null) return malformedHeader(SIGNATURE_HEADER, EXPECTED_FORMAT);
  const seconds = parseUnixSeconds(parsed.timestamp);
  if (seconds === null) return malformedHeader(SIGNATURE_HEADER, EXPECTED_FORMAT);
  const outcome = compareSignatures({
    algorithm: 'sha256',
    header: SIGNATURE_HEADER,
    keys: secrets,
    candidates: parsed.signatures,
    expectedFor: (secret) => hmacEncoded('sha256', secret, [`${seconds}.`, input.body], 'hex'),
  });
  if (!outcome.ok) return outcome;
  return (
    freshnessFailure(seconds * 1000, floorToSecondMs(input.nowMs), input.toleranceSeconds, `${SIGNATURE_HEADER} t`) ??
    outcome
  );
}

export function signStripe(input: SignInput): Record<string, string> {
  const timestamp = String(Math.floor(input.nowMs / 1000));
  const signature = hmacEncoded('sha256', input.secret, [`${timestamp}.`, input.body], 'hex');
  return { 'stripe-signature': `t=${timestamp},v1=${signature}` };
}

/** Event objects carry their own type (`payment_intent.succeeded`) and id (`evt_…`). */
export function identifyStripe(body: Buffer, _headers: HeaderBag): EventIdentity {
  const json = parseJsonBody(body);
  if (!isRecord(json)) return { eventType: 'unknown', externalId: null };
  return { eventType: asIdentifier(json['type']) ?? 'unknown', externalId: asIdentifier(json['id']) };
}

export const stripePreset: Preset = {
  name: 'stripe',
  trustMode: 'signed',
  requiredHeaders: ['stripe-signature'],
  sensitiveHeaders: ['stripe-signature'],
  verify: verifyStripe,
  sign: signStripe,
  identify: identifyStripe,
};
