import { randomUUID, verify as verifySignature, type KeyObject } from 'node:crypto';
import type { StandardWebhooksScheme } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { firstHeader, headerValue } from '../headers.ts';
import { compareSha256, hmacEncoded } from '../hmac.ts';
import {
  MISSING_SECRET,
  malformedHeader,
  missingHeader,
  noCredential,
  rotationNote,
  signatureMismatch,
} from '../verdicts.ts';
import { asIdentifier, isRecord, LazyBody } from '../identify.ts';
import { freshSignature, parseUnixSeconds } from '../timestamp.ts';
import { DecodedKeys } from '../schemes/keys.ts';
import { ed25519Key } from '../schemes/public-key-schemes.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { genericSummary } from '../summary.ts';
import { code, defineEngine, type Verification } from './engine.ts';

const ID_HEADERS = ['webhook-id', 'svix-id'] as const;
const TIMESTAMP_HEADERS = ['webhook-timestamp', 'svix-timestamp'] as const;
const SIGNATURE_HEADERS = ['webhook-signature', 'svix-signature'] as const;
const SECRET_PREFIX = 'whsec_';
const PUBLIC_KEY_PREFIX = 'whpk_';

/** How a configured secret becomes the HMAC key: base64 after whsec_, or (Polar) its own text. */
type StandardWebhooksKey = NonNullable<StandardWebhooksScheme['key']>;

/** A preset's secrets and public keys, each decoded once (schemes/keys.ts); verify and sign share them. */
interface PresetKeys {
  readonly secrets: DecodedKeys<Buffer>;
  readonly publicKeys: DecodedKeys<KeyObject>;
}

/**
 * Standard Webhooks keys are base64 after an optional `whsec_` prefix; a key without the prefix is
 * still base64-decoded, as the standardwebhooks library does. A key that is not base64 (or decodes
 * to nothing) cannot be the key the sender used, so it is treated as unusable, not as raw bytes.
 */
function decodeStandardWebhooksSecret(secret: string): Buffer | null {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : null;
}

/**
 * Standard Webhooks (and Svix, which uses the same scheme under `svix-*` names): base64
 * HMAC-SHA256 of `${id}.${timestamp}.${body}`; the signature header is a space-separated list of
 * `<version>,<signature>`. `v1` (HMAC) entries are checked with the configured secrets, `v1a`
 * (Ed25519) entries with the configured public keys, and never one with the other: a public key
 * is public, so an HMAC keyed with it proves nothing. Each header is looked up under both names
 * independently, as the Svix library does.
 */
function verifyStandardWebhooks(input: VerifyInput, decoded: PresetKeys): VerifyOutcome {
  const configured = [...input.secrets, ...input.publicKeys];
  if (configured.every((value) => value.length === 0)) return MISSING_SECRET;
  const keys = decoded.secrets.usable(input.secrets);
  const publicKeys = decoded.publicKeys.usable(input.publicKeys);
  if (keys.length === 0 && publicKeys.length === 0) {
    return noCredential('usable secret (keys must be base64, optionally whsec_-prefixed)');
  }
  const id = firstHeader(input.headers, ID_HEADERS);
  if (id === undefined) return missingHeader(ID_HEADERS.join(' or '));
  const timestamp = firstHeader(input.headers, TIMESTAMP_HEADERS);
  if (timestamp === undefined) return missingHeader(TIMESTAMP_HEADERS.join(' or '));
  const signature = firstHeader(input.headers, SIGNATURE_HEADERS);
  if (signature === undefined) return missingHeader(SIGNATURE_HEADERS.join(' or '));

  const seconds = parseUnixSeconds(timestamp.value);
  if (seconds === null) return malformedHeader(timestamp.name, 'unix seconds');
  const entries = signature.value.trim().split(/\s+/);
  const versioned = (version: string): string[] =>
    entries.filter((entry) => entry.startsWith(`${version},`)).map((entry) => entry.slice(version.length + 1));
  // Only the entries this config can check count: v1 needs a secret, v1a a public key.
  const candidates = keys.length > 0 ? versioned('v1') : [];
  const ed25519 = publicKeys.length > 0 ? versioned('v1a') : [];
  if (candidates.length === 0 && ed25519.length === 0) {
    const wanted = keys.length > 0 ? 'v1,<base64>' : 'v1a,<base64> (Ed25519)';
    return malformedHeader(signature.name, `space-separated ${wanted} entries`);
  }
  const parts = [`${id.value}.${seconds}.`, input.body];
  const outcome =
    candidates.length === 0
      ? verifyV1a(signature.name, publicKeys, ed25519, Buffer.concat([Buffer.from(parts[0] as string), input.body]))
      : compareSha256(signature.name, keys, candidates, parts, 'base64');
  return freshSignature(outcome, seconds, input, timestamp.name);
}

/**
 * A Standard Webhooks public key: `whpk_` and base64 of the 32 raw Ed25519 bytes, or those 32
 * bytes in base64 without the prefix (as some providers show it); null when it is neither.
 */
function standardWebhooksPublicKey(text: string): ReturnType<typeof ed25519Key> {
  const encoded = text.startsWith(PUBLIC_KEY_PREFIX) ? text.slice(PUBLIC_KEY_PREFIX.length) : text;
  return ed25519Key(encoded, 'base64');
}

/** v1a: Ed25519 over the same `${id}.${timestamp}.${body}`, checked with each configured public key. */
function verifyV1a(header: string, keys: KeyObject[], signatures: string[], message: Buffer): VerifyOutcome {
  let index = -1;
  keys.forEach((key, i) => {
    for (const candidate of signatures) {
      let good = false;
      try {
        good = verifySignature(null, message, key, Buffer.from(candidate, 'base64'));
      } catch {
        good = false;
      }
      if (good && index === -1) index = i;
    }
  });
  if (index === -1) return signatureMismatch(header);
  const rotation = rotationNote('key', index, keys.length);
  return { ok: true, detail: `ed25519 valid (${header} v1a)${rotation}` };
}

/**
 * Re-signs with a fresh timestamp. The message id is kept when the stored delivery has one, since
 * receivers dedupe on it; headers are emitted under whichever family (webhook-* or svix-*) the
 * original used, so merging them over the stored headers replaces rather than duplicates.
 */
function signStandardWebhooks(input: SignInput, decoded: PresetKeys): Record<string, string> {
  const key = decoded.secrets.get(input.secret);
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

function identifyStandardWebhooks(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  return {
    eventType: (isRecord(json) ? asIdentifier(json['type']) : null) ?? 'unknown',
    externalId: asIdentifier(firstHeader(headers, ID_HEADERS)?.value),
  };
}

/** The envelope is `{type, timestamp, data}`: the first few text fields of `data` tell events apart. */
function summarizeStandardWebhooks(body: DeliveryBody): string | null {
  const json = body.json;
  return isRecord(json) && isRecord(json['data']) ? genericSummary(json['data']) : genericSummary(json);
}

function decodeKey(secret: string, kind: StandardWebhooksKey): Buffer | null {
  if (kind === 'whsec') return decodeStandardWebhooksSecret(secret);
  return secret === '' ? null : Buffer.from(secret, 'utf8');
}

/** The headers whose original values a v1a (public key) delivery is replayed with. */
const STANDARD_WEBHOOKS_HEADERS = [...ID_HEADERS, ...TIMESTAMP_HEADERS, ...SIGNATURE_HEADERS];

/**
 * A member of the Standard Webhooks family (Svix, Clerk, Resend, OpenAI, Replicate, Polar): the
 * same scheme, its own key spelling; with only public keys configured it checks v1a and, like
 * every asymmetric scheme, replays with the original headers instead of signing.
 */
function standardWebhooksVerification(keyKind: StandardWebhooksKey, publicKeyOnly: boolean): Verification {
  const decoded: PresetKeys = {
    secrets: new DecodedKeys((secret) => decodeKey(secret, keyKind)),
    publicKeys: new DecodedKeys(standardWebhooksPublicKey),
  };
  const checkCredential = (value: string): string | null => {
    if (value.startsWith(PUBLIC_KEY_PREFIX)) return 'a whpk_ value is a public key: set it as public_key';
    return decoded.secrets.get(value) === null ? 'not a base64 (optionally whsec_-prefixed) secret' : null;
  };
  const checkPublicKey = (value: string): string | null =>
    decoded.publicKeys.get(value) === null ? 'not an Ed25519 public key (whpk_ or base64 of its 32 bytes)' : null;
  return {
    requiredHeaders: [ID_HEADERS, TIMESTAMP_HEADERS, SIGNATURE_HEADERS],
    sensitiveHeaders: publicKeyOnly ? [] : ['webhook-signature', 'svix-signature'],
    verify: (input: VerifyInput) => verifyStandardWebhooks(input, decoded),
    checkCredential,
    checkPublicKey,
    ...(publicKeyOnly
      ? { originalHeaders: STANDARD_WEBHOOKS_HEADERS }
      : { sign: (input: SignInput) => signStandardWebhooks(input, decoded) }),
  };
}

export const standardWebhooksEngine = defineEngine<'standard-webhooks'>({
  kind: 'standard-webhooks',
  // v1 is HMAC with a secret, v1a Ed25519 with a public key: either is enough.
  credentialKeys: ['secret', 'public_key'],
  // Configured with whpk_ public keys only, it is asymmetric.
  credential: (options) =>
    options?.public_key !== undefined && options.secret === undefined ? 'public_key' : 'secret',
  signatureHeaders: () => SIGNATURE_HEADERS,
  privateKeyAlgorithm: 'a v1a Ed25519',
  build: ({ scheme, credential }) => standardWebhooksVerification(scheme.key ?? 'whsec', credential === 'public_key'),
  identify: identifyStandardWebhooks,
  summarize: summarizeStandardWebhooks,
  docs: {
    scheme: () =>
      'Standard Webhooks: HMAC-SHA256 base64 of `{id}.{timestamp}.{body}`; v1a Ed25519 with `public_key: whpk_…`',
    headers: () => ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(code).join(', ') + ' (or `svix-*`)',
    timestamped: () => true,
  },
});
