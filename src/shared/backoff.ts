/**
 * Exponential backoff, the one formula every retry in switchboard uses: forwarding's deliveries,
 * the event bus and queue reconnects, `switchboard listen` and the web UI's live stream. Each
 * caller keeps its own numbers and its own jitter. Pure (no Node API): the browser bundle
 * imports it too.
 */

export interface Backoff {
  /** The ceiling of the first retry's wait. */
  initialMs: number;
  /** The longest wait. */
  maxMs: number;
  /**
   * full: a random wait up to the ceiling, which spreads a backlog that failed together (the
   * default); half: half fixed, half random, so never a hot loop; none: the ceiling itself.
   */
  jitter?: 'full' | 'half' | 'none';
}

/** The wait before retry n (n counts the failed attempts so far, from 1): initial × 2^(n−1), capped at max, jittered. */
export function backoffDelayMs(backoff: Backoff, failedAttempts: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, failedAttempts - 1);
  // 2^exponent overflows to Infinity long before it matters; min() caps it either way.
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(exponent, 52));
  switch (backoff.jitter ?? 'full') {
    case 'full':
      return Math.floor(random() * ceiling);
    case 'half':
      return Math.round(ceiling / 2 + (random() * ceiling) / 2);
    case 'none':
      return ceiling;
  }
}
