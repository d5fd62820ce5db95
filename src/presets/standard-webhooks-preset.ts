import { randomUUID } from 'node:crypto';
import { invalidArgument } from '../errors/app-error.ts';
import { firstHeader, headerValue } from './headers.ts';
import { compareSha256, hmacEncoded, malformedHeader, missingHeader, MISSING_SECRET, signedPreset } from './hmac.ts';
import { asIdentifier, isRecord, LazyBody } from './identify.ts';
import { freshSignature, parseUnixSeconds } from './timestamp.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { genericSummary } from './summary.ts';

const ID_HEADERS = ['webhook-id', 'svix-id'] as const;
const TIMESTAMP_HEADERS = ['webhook-timestamp', 'svix-timestamp'] as const;
const SIGNATURE_HEADERS = ['webhook-signature', 'svix-signature'] as const;
const SECRET_PREFIX = 'whsec_';

/**
 * Standard Webhooks keys are base64 after an optional `whsec_` prefix; a key without the prefix is
 * still base64-decoded, as the standardwebhooks library does. A key that is not base64 (or decodes
 * to nothing) cannot be the key the sender used, so it is treated as unusable, not as raw bytes.
 */
export function decodeStandardWebhooksSecret(secret: string): Buffer | null {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : null;
}

/**
 * Standard Webhooks (and Svix, which uses the same scheme under `svix-*` names): base64
 * HMAC-SHA256 of `${id}.${timestamp}.${body}`; the signature header is a space-separated list of
 * `<version>,<signature>`. Only `v1` (HMAC) entries are considered; `v1a` (Ed25519) needs a public
 * key this preset does not take. Each header is looked up under both names independently, as the
 * Svix library does.
 */
export function verifyStandardWebhooks(input: VerifyInput): VerifyOutcome {
  if (input.secrets.every((secret) => secret.length === 0)) return MISSING_SECRET;
  const keys = input.secrets.map(decodeStandardWebhooksSecret).filter((key): key is Buffer => key !== null);
  if (keys.length === 0) {
    return {
      ok: false,
      reason: 'missing_secret',
      detail: 'no usable secret configured (keys must be base64, optionally whsec_-prefixed); delivery rejected',
    };
  }
  const id = firstHeader(input.headers, ID_HEADERS);
  if (id === undefined) return missingHeader(ID_HEADERS.join(' or '));
  const timestamp = firstHeader(input.headers, TIMESTAMP_HEADERS);
  if (timestamp === undefined) return missingHeader(TIMESTAMP_HEADERS.join(' or '));
  const signature = firstHeader(input.headers, SIGNATURE_HEADERS);
  if (signature === undefined) return missingHeader(SIGNATURE_HEADERS.join(' or '));

  const seconds = parseUnixSeconds(timestamp.value);
  if (seconds === null) return malformedHeader(timestamp.name, 'unix seconds');
  const candidates = signature.value
    .trim()
    .split(/\s+/)
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => entry.slice('v1,'.length));
  if (candidates.length === 0) return malformedHeader(signature.name, 'space-separated v1,<base64> entries');

  const parts = [`${id.value}.${seconds}.`, input.body];
  const outcome = compareSha256(signature.name, keys, candidates, parts, 'base64');
  return freshSignature(outcome, seconds, input, timestamp.name);
}

/**
 * Re-signs with a fresh timestamp. The message id is kept when the stored delivery has one, since
 * receivers dedupe on it; headers are emitted under whichever family (webhook-* or svix-*) the
 * original used, so merging them over the stored headers replaces rather than duplicates.
 */
export function signStandardWebhooks(input: SignInput): Record<string, string> {
  const key = decodeStandardWebhooksSecret(input.secret);
  if (key === null) throw invalidArgument('standard-webhooks secret is not base64 (optionally whsec_-prefixed)');
  const stored = input.headers ?? {};
  const useSvixNames = headerValue(stored, 'webhook-id') === undefined && headerValue(stored, 'svix-id') !== undefined;
  const id = firstHeader(stored, ID_HEADERS)?.value ?? `msg_${randomUUID().replace(/-/g, '')}`;
  const timestamp = String(Math.floor(input.nowMs / 1000));
  const signature = hmacEncoded('sha256', key, [`${id}.${timestamp}.`, input.body], 'base64');
  const family = useSvixNames ? 'svix' : 'webhook';
  return {
    [`${family}-id`]: id,
    [`${family}-timestamp`]: timestamp,
    [`${family}-signature`]: `v1,${signature}`,
  };
}

export function identifyStandardWebhooks(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  return {
    eventType: (isRecord(json) ? asIdentifier(json['type']) : null) ?? 'unknown',
    externalId: asIdentifier(firstHeader(headers, ID_HEADERS)?.value),
  };
}

/** The envelope is `{type, timestamp, data}`: the first few text fields of `data` tell events apart. */
export function summarizeStandardWebhooks(body: DeliveryBody): string | null {
  const json = body.json;
  return isRecord(json) && isRecord(json['data']) ? genericSummary(json['data']) : genericSummary(json);
}

export const standardWebhooksPreset = signedPreset(
  'standard-webhooks',
  {
    requiredHeaders: [ID_HEADERS, TIMESTAMP_HEADERS, SIGNATURE_HEADERS],
    sensitiveHeaders: ['webhook-signature', 'svix-signature'],
  },
  {
    verify: verifyStandardWebhooks,
    sign: signStandardWebhooks,
    identify: identifyStandardWebhooks,
    summarize: summarizeStandardWebhooks,
  },
);
