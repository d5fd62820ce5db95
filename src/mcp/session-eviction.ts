/**
 * Which session makes room when a cap is reached. A session is idle when it has no request in
 * progress and no GET stream open: nothing of it is running and nobody is listening on it, so
 * closing it costs its client at most a new initialize (a client whose session is gone gets 404,
 * which tells it to start again). Of the idle ones the least recently used goes first: one-shot
 * clients (health checks, the Inspector CLI, scripts) that never send DELETE leave idle sessions
 * behind, and the oldest of those is the least likely to be used again.
 */

/** What eviction looks at in a session. */
export interface EvictionCandidate {
  /** Requests in progress (POST, DELETE). */
  readonly inflight: number;
  /** GET streams open. */
  readonly streams: number;
  /** When its client last sent a request, or one finished. */
  readonly lastActive: number;
  readonly closed: boolean;
}

export const isIdle = (session: EvictionCandidate): boolean =>
  !session.closed && session.inflight === 0 && session.streams === 0;

/** The idle session, among those `eligible` accepts, whose client was active longest ago. */
export function leastRecentlyUsedIdle<S extends EvictionCandidate>(
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
