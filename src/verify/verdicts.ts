/**
 * The words of a verdict, written once: every engine says "missing header X", "signature mismatch
 * (X)" and "secret 2 of 3" the same way, since operators grep for them and clients read `reason`.
 * A detail names the header and, on success, which of several rotated credentials matched (so an
 * operator can tell when an old one stops being used), never a credential or a signature value.
 */
import type { VerifyOutcome } from './preset-types.ts';

/** No credential the check can use: `what` says which (a secret, a public key, a usable one and why). */
export function noCredential(what: string): VerifyOutcome {
  return { ok: false, reason: 'missing_secret', detail: `no ${what} configured; delivery rejected` };
}

export const MISSING_SECRET: VerifyOutcome = noCredential('secret');

export function missingHeader(name: string): VerifyOutcome {
  return { ok: false, reason: 'missing_header', detail: `missing header ${name}` };
}

export function malformedHeader(name: string, expected: string): VerifyOutcome {
  return { ok: false, reason: 'malformed_header', detail: `malformed ${name} (expected ${expected})` };
}

/** A signature carried in the body (Mailgun, Adyen) that is not where or what its scheme says. */
export const malformedBody = (detail: string): VerifyOutcome => ({ ok: false, reason: 'malformed_header', detail });

/** What the scheme reads from the body (a signature, a passcode) is not there. */
export const missingInBody = (detail: string): VerifyOutcome => ({ ok: false, reason: 'missing_header', detail });

/** A signature that does not check out, with what was compared. */
export function badSignature(detail: string): VerifyOutcome {
  return { ok: false, reason: 'bad_signature', detail };
}

/** The plain mismatch: no configured credential made the signature in `where` (a header, the body). */
export function signatureMismatch(where: string): VerifyOutcome {
  return badSignature(`signature mismatch (${where})`);
}

/** A presented credential (`kind`: token, password, passcode) that matches none configured, read from `where`. */
export function credentialMismatch(kind: string, where: string): VerifyOutcome {
  return { ok: false, reason: 'token_mismatch', detail: `${kind} mismatch (${where})` };
}

/**
 * A signed time outside the tolerance: `what` (a timestamp, a token's exp or nbf) and `where`, the
 * header or field it came from and how far off it is.
 */
export function outsideTolerance(what: 'timestamp' | 'token', toleranceSeconds: number, where: string): VerifyOutcome {
  return { ok: false, reason: 'stale_timestamp', detail: `${what} outside ${toleranceSeconds} s tolerance (${where})` };
}

/** The body carries no signed timestamp where the scheme says, so its age cannot be checked. */
export function freshnessUnverifiable(field: string): VerifyOutcome {
  return { ok: false, reason: 'stale_timestamp', detail: `${field} missing from body; freshness unverifiable` };
}

/** What a credential is called in a rotation note: a secret (HMAC, JWT), a public key, a token. */
type CredentialNoun = 'secret' | 'key' | 'token' | 'credential';

/** `; secret 2 of 3` when several are configured (rotation), nothing when there is one. */
export function rotationNote(noun: CredentialNoun, index: number, count: number): string {
  return count > 1 ? `; ${noun} ${index + 1} of ${count}` : '';
}
