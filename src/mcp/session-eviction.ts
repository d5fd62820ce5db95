/**
 * Which session makes room when a cap is reached. A session is idle when it has no request in
 * progress and no GET stream open: nothing of it is running and nobody is listening on it, so
 * closing it costs its client at most a new initialize (a client whose session is gone gets 404,
 * which tells it to start again). Of the idle ones the least recently used goes first: one-shot
 * clients (health checks, the Inspector CLI, scripts) that never send DELETE leave idle sessions
 * behind, and the oldest of those is the least likely to be used again.
 */

/** What eviction looks at in a session. */
interface EvictionCandidate {
  /** Requests in progress (POST, DELETE). */
  readonly inflight: number;
  /** GET streams open. */
  readonly streams: number;
  /** When its client last sent a request, or one finished. */
  readonly lastActive: number;
  readonly closed: boolean;
}

const isIdle = (session: EvictionCandidate): boolean =>
  !session.closed && session.inflight === 0 && session.streams === 0;

/** The idle session, among those `eligible` accepts, whose client was active longest ago. */
function leastRecentlyUsedIdle<S extends EvictionCandidate>(
  sessions: Iterable<S>,
  eligible: (session: S) => boolean,
): S | undefined {
  let oldest: S | undefined;
  for (const session of sessions) {
    if (!isIdle(session) || !eligible(session)) continue;
    if (oldest === undefined || session.lastActive < oldest.lastActive) oldest = session;
  }
  return oldest;
}

/** A session as the slot count sees it: eviction's view, and the token that holds it. */
export interface SlotHolder extends EvictionCandidate {
  readonly caller: { readonly id: string };
}

/** Plain functions over the table (no `this`), so the session table can hand them around. */
export interface SessionSlots<S extends SlotHolder> {
  /** Takes (1) a slot for a session being initialized, or gives it back (-1) once it is in the table or failed. */
  reserve: (callerId: string, delta: 1 | -1) => void;
  /**
   * Makes room for one more session of the caller, or says why there is none. `evict` must take
   * the victim out of the table synchronously, so concurrent initializes cannot both count its slot.
   */
  admit: (
    callerId: string,
    evict: (victim: S, why: string) => Promise<void>,
  ) => { evicted: Promise<void>[] } | 'caller_full' | 'full';
}

/** The caps over the session table and the sessions still being initialized (not in it yet). */
export function createSessionSlots<S extends SlotHolder>(
  sessions: ReadonlyMap<string, S>,
  limits: { maxSessions: number; maxSessionsPerCaller: number },
): SessionSlots<S> {
  /** Sessions being initialized: they count against the caps before they have an id. */
  let reserved = 0;
  const reservedBy = new Map<string, number>();
  /** Sessions a caller holds, being initialized included. */
  const sessionsOf = (callerId: string): number => {
    let count = reservedBy.get(callerId) ?? 0;
    for (const session of sessions.values()) if (session.caller.id === callerId) count += 1;
    return count;
  };
  return {
    reserve(callerId, delta) {
      reserved += delta;
      const next = (reservedBy.get(callerId) ?? 0) + delta;
      if (next > 0) reservedBy.set(callerId, next);
      else reservedBy.delete(callerId);
    },
    admit(callerId, evict) {
      const evicted: Promise<void>[] = [];
      if (sessionsOf(callerId) >= limits.maxSessionsPerCaller) {
        const victim = leastRecentlyUsedIdle(sessions.values(), (session) => session.caller.id === callerId);
        if (victim === undefined) return 'caller_full';
        evicted.push(evict(victim, 'evicted: least recently used idle session of a token at its cap'));
      }
      if (sessions.size + reserved >= limits.maxSessions) {
        // Any token's idle session may go; an active one (a call running, a stream open) never does.
        const victim = leastRecentlyUsedIdle(sessions.values(), () => true);
        if (victim === undefined) return 'full';
        evicted.push(evict(victim, 'evicted: least recently used idle session at the overall cap'));
      }
      return { evicted };
    },
  };
}
