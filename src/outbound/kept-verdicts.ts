/**
 * What forwarding keeps between deliveries to one target: the pinned connection, and the target's
 * last check with everything it was made against, so the check is repeated only when one of its
 * inputs may have changed.
 */
import type { Dispatcher } from 'undici';
import type { CheckedTarget, ResolvedAddress } from './target-policy/resolve-target.ts';
import type { SelfAddress } from './target-policy/self-loop.ts';

/** A pinned dispatcher kept open for one keepAliveKey, and the checked pin it serves. */
export interface KeptConnection {
  pin: string;
  /** The verdict it was last used under: the same one needs no new pin. */
  verdict: KeptVerdict;
  dispatcher: Dispatcher;
}

/**
 * A keepAliveKey's last verdict: the checked target and everything it was checked against. It is
 * used again only for the same URL and the same self addresses, and only until the resolver's
 * answer may have changed: an IP literal never resolves; a name is asked again once its answer's
 * TTL ran out, or on every delivery when the resolver gives none (the system resolver), and a
 * different answer is checked again from scratch. A failed send drops it.
 */
export interface KeptVerdict {
  href: string;
  /** What options.selfAddresses() returned when checked; a new list (after listen) means a new check. */
  rawSelf: readonly SelfAddress[];
  selfAddresses: readonly SelfAddress[];
  target: CheckedTarget;
  requestTarget: RequestTarget;
  /** The resolver's addresses, in order; null for an IP literal. */
  answer: readonly string[] | null;
  /** When to ask the resolver again (ms since the epoch). */
  resolveAfter: number;
}

/** The origin and path (with the query) a request goes to. */
export interface RequestTarget {
  origin: string;
  path: string;
}

export function requestTargetOf(target: CheckedTarget): RequestTarget {
  const url = new URL(target.url);
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

/** Until when an answer may be used without asking again: its shortest TTL; now when it gives none. */
export function answerExpiry(answer: readonly ResolvedAddress[] | null, nowMs: number): number {
  if (answer === null) return Infinity;
  let ttl = Infinity;
  for (const entry of answer) ttl = Math.min(ttl, entry.ttl ?? 0);
  return ttl === Infinity ? nowMs : nowMs + ttl * 1000;
}

export const sameAnswer = (answer: readonly ResolvedAddress[], addresses: readonly string[] | null): boolean =>
  addresses !== null && answer.length === addresses.length && answer.every((a, i) => a.address === addresses[i]);
