/**
 * The contract every verification preset implements. Presets are pure: they see the exact raw
 * bytes and headers, never the network or the database, so they can be tested and reused by
 * replay (to re-sign) without a server.
 */

import type { TrustMode } from '../../generated/types.ts';
import type { PresetName } from '../../generated/constants.ts';

/** Incoming headers with lower-cased names, as Node's IncomingHttpHeaders gives them. */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

export type VerifyFailureReason =
  'missing_header' | 'malformed_header' | 'bad_signature' | 'stale_timestamp' | 'token_mismatch' | 'missing_secret';

export type VerifyOutcome = { ok: true; detail: string } | { ok: false; reason: VerifyFailureReason; detail: string };

export interface VerifyInput {
  /** The exact bytes received. */
  body: Buffer;
  headers: HeaderBag;
  /** All currently accepted secrets (or tokens): any one matching is a pass, for rotation. */
  secrets: readonly string[];
  /** Allowed clock skew for schemes that sign a timestamp. */
  toleranceSeconds: number;
  /** Current time in milliseconds since the epoch, injected so tests can move the clock. */
  nowMs: number;
}

export interface SignInput {
  body: Buffer;
  secret: string;
  nowMs: number;
  /** Stored headers of the original delivery, for schemes that sign an id from a header. */
  headers?: HeaderBag;
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

export interface Preset {
  readonly name: PresetName;
  /** Every preset is one of the webhook trust modes; queue messages have no preset. */
  readonly trustMode: Exclude<TrustMode, 'queue'>;
  /** Headers that must be present before the signature or token is looked at (checked in order). */
  readonly requiredHeaders: readonly (string | readonly string[])[];
  /** Header names whose values are secrets or signatures, so stored copies are redacted. */
  readonly sensitiveHeaders: readonly string[];
  readonly verify: (input: VerifyInput) => VerifyOutcome;
  /** Token presets: the lower-cased header a sender puts the token in (replay and trigger use it too). */
  readonly tokenHeader?: string;
  /** Produces the headers a sender would set for these bytes; absent for token and open presets. */
  readonly sign?: (input: SignInput) => Record<string, string>;
  readonly identify: Identify;
  /**
   * One line from the payload that tells this delivery from others of its type (at most the
   * contract's summary length), or null when there is nothing to show. Reads the body's JSON
   * through `body`, which identify() has usually parsed already.
   */
  readonly summarize: (body: DeliveryBody, headers: HeaderBag) => string | null;
}
