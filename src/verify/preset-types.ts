/**
 * The contract every verification preset implements. Presets are pure: they see the exact raw
 * bytes and headers, never the network or the database, so they can be tested and reused by
 * replay (to re-sign) without a server.
 */

import type { TrustMode } from '../../generated/types.ts';
import type { PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry, ProviderStatus } from '../../generated/types.ts';

export type HandshakeKind = NonNullable<ProviderCatalogEntry['handshake']>;

/** Incoming headers with lower-cased names, as Node's IncomingHttpHeaders gives them. */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

export type VerifyFailureReason =
  | 'missing_header'
  | 'malformed_header'
  | 'bad_signature'
  | 'stale_timestamp'
  | 'token_mismatch'
  | 'missing_secret'
  | 'reused_signature'
  | 'duplicate_json_key';

/**
 * A single-use value a passing signature carries, for schemes whose signature does not cover the
 * body (Mailgun signs only timestamp + token): the signature proves only that the sender held the
 * key at some point, so ingest claims the token and a second use is refused until it expires.
 */
interface SignatureNonce {
  readonly token: string;
  /** When the signature could no longer pass its freshness check: the claim may lapse then. */
  readonly expiresAtMs: number;
}

export type VerifyOutcome =
  { ok: true; detail: string; nonce?: SignatureNonce } | { ok: false; reason: VerifyFailureReason; detail: string };

/**
 * What a provider's check compares against, kept apart by kind from the config down: a value
 * configured as a public key is only ever used to check a signature, never as an HMAC key (anyone
 * may know a public key, so an HMAC made with it proves nothing).
 */
interface ProviderCredentials {
  /** Shared secrets, tokens or `username:password` pairs: any one matching is a pass, for rotation. */
  readonly secrets: readonly string[];
  /** Public keys as configured under `public_key` (Ed25519, P-256), for rotation likewise. */
  readonly publicKeys: readonly string[];
}

export interface VerifyInput extends ProviderCredentials {
  /** The exact bytes received. */
  body: Buffer;
  headers: HeaderBag;
  /** Allowed clock skew for schemes that sign a timestamp. */
  toleranceSeconds: number;
  /** Current time in milliseconds since the epoch, injected so tests can move the clock. */
  nowMs: number;
  /**
   * The request's query string as received (without its `?`), for schemes that sign the URL the
   * provider called (Twilio, Square, HubSpot, Trello): the preset knows the public URL, the
   * request brings the query.
   */
  query?: string;
}

export interface SignInput {
  body: Buffer;
  secret: string;
  nowMs: number;
  /** Stored headers of the original delivery, for schemes that sign an id from a header. */
  headers?: HeaderBag;
  /** The query string the delivery was sent with (without `?`), for schemes that sign the URL. */
  query?: string;
}

export interface EventIdentity {
  eventType: string;
  externalId: string | null;
}

/** A delivery's exact bytes, and their JSON parse (undefined when they are not a JSON object or array). */
export interface DeliveryBody {
  readonly bytes: Buffer;
  /** Parsed on first use, at most once (identify.ts, LazyBody). */
  readonly json: unknown;
}

/**
 * Names a delivery. `parsed` is the caller's parse of the same bytes (ingest passes one, so that
 * summarize() reuses the parse); without it the body is parsed here if it needs to be.
 */
export type Identify = (body: Buffer, headers: HeaderBag, parsed?: DeliveryBody) => EventIdentity;

/**
 * What a preset checks a delivery with, which decides what replay and forwarding can attach:
 * a secret re-signs; a public key cannot (switchboard never holds the private key), so the
 * original signature headers go with an event that passed its check; a token is attached as is.
 */
export type CredentialKind = NonNullable<ProviderStatus['credential']>;

interface PresetCommon {
  readonly name: PresetName;
  /** The registration handshake this provider sends, answered by ingest (verify/handshakes.ts). */
  readonly handshake?: HandshakeKind;
  /** Every preset is one of the webhook trust modes; queue messages have no preset. */
  readonly trustMode: Exclude<TrustMode, 'queue'>;
  /** Headers that must be present before the signature or token is looked at (checked in order). */
  readonly requiredHeaders: readonly (string | readonly string[])[];
  /** Header names whose values are secrets or signatures, so stored copies are redacted. */
  readonly sensitiveHeaders: readonly string[];
  readonly verify: (input: VerifyInput) => VerifyOutcome;
  readonly identify: Identify;
  /**
   * One line from the payload that tells this delivery from others of its type (at most the
   * contract's summary length), or null when there is nothing to show. Reads the body's JSON
   * through `body`, which identify() has usually parsed already.
   */
  readonly summarize: (body: DeliveryBody, headers: HeaderBag) => string | null;
}

/**
 * A preset that checks with a shared secret: it can re-sign (headers, or inside the body for
 * Mailgun and Adyen), so replay and forwarding attach a fresh signature to an event that passed.
 */
interface SecretPreset extends PresetCommon {
  readonly credential: 'secret';
  /** Produces the headers a sender would set for these bytes; absent for token and open presets. */
  readonly sign?: (input: SignInput) => Record<string, string>;
  /**
   * Presets whose signature travels in the body (Mailgun, Adyen): the bytes with a fresh signature
   * inside. Trigger uses it for its samples; replay and forwarding send the stored bytes as they are.
   */
  readonly signBody?: (input: SignInput) => Buffer;
  /**
   * Schemes that read their signature or signed fields from the JSON body (Mailgun, Adyen): a body
   * in which an object repeats a key is refused (400, recorded), since which copy was checked and
   * which a consumer reads would depend on the parser.
   */
  readonly readsSignatureFromBody?: true;
  /**
   * Null when a configured secret or token is usable by this scheme, else what is wrong with it
   * (config exits 2 naming the key); absent when any non-empty value is usable.
   */
  readonly checkCredential?: (value: string) => string | null;
  /** The same for a configured public key; present on every preset that takes `public_key`. */
  readonly checkPublicKey?: (value: string) => string | null;
  readonly originalHeaders?: never;
  readonly tokenHeader?: never;
  readonly bodyCredential?: never;
}

/**
 * A preset that checks with the provider's public key: switchboard never holds the private key,
 * so it cannot sign; replay sends the original signature headers with an event that passed.
 */
interface PublicKeyPreset extends PresetCommon {
  readonly credential: 'public_key';
  /**
   * Asymmetric presets: the stored headers that carry the original signature (and its timestamp).
   * They are not secrets, so they are stored as received, and replay sends them unchanged, only
   * with an event that passed its check.
   */
  readonly originalHeaders: readonly string[];
  /** The same for a configured public key; present on every preset that takes `public_key`. */
  readonly checkPublicKey: (value: string) => string | null;
  /** Standard Webhooks configured with public keys only still says what is wrong with a secret. */
  readonly checkCredential?: (value: string) => string | null;
  readonly sign?: never;
  readonly signBody?: never;
  readonly readsSignatureFromBody?: never;
  readonly tokenHeader?: never;
  readonly bodyCredential?: never;
}

/** A preset that compares a token (a header, HTTP Basic, a passcode in the body): replay attaches it as is. */
interface TokenPreset extends PresetCommon {
  readonly credential: 'token';
  /** Token presets: the lower-cased header a sender puts the token in (replay and trigger use it too). */
  readonly tokenHeader?: string;
  /**
   * Presets whose credential travels in the body (figma's passcode). Ingest refuses a body without
   * it (400, not recorded, as a missing header is) and stores redact()'s bytes: the delivery with
   * the credential's value blanked and nothing else changed. restore() puts the configured one back,
   * for a replay, forward or listen of an event that passed its check on arrival (never another).
   */
  readonly bodyCredential?: {
    /** What a 400 says is missing. */
    readonly name: string;
    readonly present: (body: Buffer) => boolean;
    readonly redact: (body: Buffer) => Buffer;
    readonly restore: (body: Buffer, credential: string) => Buffer;
  };
  /** Null when a configured token is usable by this scheme, else what is wrong with it. */
  readonly checkCredential?: (value: string) => string | null;
  /** HTTP Basic's Authorization header, or the passcode written into the body, for trigger and replay. */
  readonly sign?: (input: SignInput) => Record<string, string>;
  readonly signBody?: (input: SignInput) => Buffer;
  readonly readsSignatureFromBody?: never;
  readonly originalHeaders?: never;
  readonly checkPublicKey?: never;
}

/** A preset that checks nothing (open): nothing to sign, attach or configure. */
interface OpenPreset extends PresetCommon {
  readonly credential: 'none';
  readonly sign?: never;
  readonly signBody?: never;
  readonly readsSignatureFromBody?: never;
  readonly originalHeaders?: never;
  readonly checkPublicKey?: never;
  readonly checkCredential?: never;
  readonly tokenHeader?: never;
  readonly bodyCredential?: never;
}

/**
 * What a preset is, by what it checks with: the members that only make sense for one credential
 * kind exist only on that kind, so a public-key preset cannot carry a signer and a token preset
 * no original signature headers.
 */
export type Preset = SecretPreset | PublicKeyPreset | TokenPreset | OpenPreset;

/**
 * A provider's own code on top of its scheme's engine (verify/hooks/): what its catalog entry
 * cannot say. Each is optional; a provider without hooks is its entry's data alone.
 */
export interface ProviderHooks {
  readonly identify?: Identify;
  readonly summarize?: Preset['summarize'];
  /** Headers that carry a signature the scheme does not read (GitHub's legacy SHA-1), redacted all the same. */
  readonly alsoSensitive?: readonly string[];
}
