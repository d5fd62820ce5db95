/**
 * The words of a verdict, written once: every engine says "missing header X", "signature mismatch
 * (X)" and "secret 2 of 3" the same way, since operators grep for them and clients read `reason`.
 * A detail names the header and, on success, which of several rotated credentials matched (so an
 * operator can tell when an old one stops being used), never a credential or a signature value.
 */
import type { VerifyOutcome } from './preset-types.ts';

export const MISSING_SECRET: VerifyOutcome = {
  ok: false,
  reason: 'missing_secret',
  detail: 'no secret configured; delivery rejected',
};

export function missingHeader(name: string): VerifyOutcome {
  return { ok: false, reason: 'missing_header', detail: `missing header ${name}` };
}

export function malformedHeader(name: string, expected: string): VerifyOutcome {
  return { ok: false, reason: 'malformed_header', detail: `malformed ${name} (expected ${expected})` };
}

/** A signature that does not check out, with what was compared. */
export function badSignature(detail: string): VerifyOutcome {
  return { ok: false, reason: 'bad_signature', detail };
}

/** The plain mismatch: no configured credential made the signature in `where` (a header, the body). */
export function signatureMismatch(where: string): VerifyOutcome {
  return badSignature(`signature mismatch (${where})`);
}

/** What a credential is called in a rotation note: a secret (HMAC, JWT), a public key, a token. */
type CredentialNoun = 'secret' | 'key' | 'token' | 'credential';

/** `; secret 2 of 3` when several are configured (rotation), nothing when there is one. */
export function rotationNote(noun: CredentialNoun, index: number, count: number): string {
  return count > 1 ? `; ${noun} ${index + 1} of ${count}` : '';
}
