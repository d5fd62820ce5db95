/** How an event's trust is put into words: the one place that decides what looks verified. */
import type { EventDetail, TrustMode } from '../../../generated/types.ts';
import { TRUST_LABELS, trustLevel, type TrustLevel } from '../../shared/trust-words.ts';

type TrustIcon = 'shield-check' | 'shield-x' | 'key' | 'inbox' | 'globe';

export interface TrustLook {
  level: TrustLevel;
  icon: TrustIcon;
  label: string;
  short: string;
  explain: string;
}

const ICONS = { verified: 'shield-check', failed: 'shield-x', token: 'key', queue: 'inbox', open: 'globe' } as const;

const EXPLAIN: Readonly<Record<TrustLevel, string>> = {
  verified: 'The provider signed these bytes and the signature checked out.',
  failed: 'The signature was missing or did not match: do not trust this payload.',
  token: 'A shared token was compared. It proves who knows the token, not what was sent.',
  queue: 'Read from a Redis queue; nothing about its origin was checked.',
  open: 'Anyone who can reach the route could have sent this.',
};

/**
 * The one place that decides how an event's trust looks. Only a signed event whose signature
 * checked out is green; every other case says "Unverified" (or "Signature failed") in words,
 * so colour is never the only signal.
 */
export function trustLook(trustMode: TrustMode, verified: boolean): TrustLook {
  const level = trustLevel(trustMode, verified);
  const [label, short] = TRUST_LABELS[level];
  return { level, icon: ICONS[level], label, short, explain: EXPLAIN[level] };
}

/**
 * Why an event may only be replayed unsigned, or null when it replays as usual. The server applies
 * the same rule (and refuses a signed replay of such an event); the UI explains it up front.
 */
export function replayRule(event: Pick<EventDetail, 'trust_mode' | 'verified' | 'passed_check'>): string | null {
  if (event.trust_mode === 'signed' && (event.passed_check === false || !event.verified)) {
    return (
      'This event failed signature verification when it arrived. Replaying it with a fresh signature would make ' +
      'bytes the provider may never have sent look genuine to your consumer, so it can only be sent unsigned: ' +
      'the stored bytes with no signature or token.'
    );
  }
  if (event.trust_mode === 'token' && event.passed_check === false) {
    return (
      'Its token did not match when it arrived. Replaying it with the configured token would make it look ' +
      'genuine to your consumer, so it can only be sent unsigned: the stored bytes with no token.'
    );
  }
  return null;
}
