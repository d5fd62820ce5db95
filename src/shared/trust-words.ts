/**
 * How an event's trust is put into words, wherever a person reads it: the UI's badges and the
 * `switchboard serve` terminal's lines say the same thing in the same words.
 */
import type { TrustMode } from '../../generated/types.ts';

export type TrustLevel = 'verified' | 'failed' | 'token' | 'open' | 'queue';

/**
 * The full label (screen readers, large badges) and the short one (list rows, small badges, the
 * terminal). The short one still says "Unverified" in words: a colour or an icon alone is not
 * enough to tell a token or open event from a verified one at a glance.
 *
 * Shape repeat by intent: a table of words, alike in shape to other tables (no logic to share).
 */
export const TRUST_LABELS: Readonly<Record<TrustLevel, readonly [label: string, short: string]>> = {
  verified: ['Verified signature', 'Verified'],
  failed: ['Signature failed', 'Sig failed'],
  token: ['Unverified — shared token', 'Unverified · token'],
  queue: ['Unverified — queue message', 'Unverified · queue'],
  open: ['Unverified — open endpoint', 'Unverified · open'],
};

/** Only a signed event whose signature checked out is verified; a signed one that did not, failed. */
export function trustLevel(trustMode: TrustMode, verified: boolean): TrustLevel {
  if (trustMode === 'signed') return verified ? 'verified' : 'failed';
  return trustMode;
}
