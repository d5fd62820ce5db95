/** When a failed delivery is tried again. */
import { backoffDelayMs } from '../shared/backoff.ts';
import { retryAfterMs } from '../shared/retry-after.ts';

export interface BackoffConfig {
  initialMs: number;
  maxMs: number;
}

/**
 * The wait before the next attempt: the consumer's Retry-After on 429 and 503, within max_ms (and
 * the contract's one-hour cap on any Retry-After), else exponential backoff with full jitter, a
 * random wait up to initial × 2^(n−1) capped at max, where n counts the attempts since the
 * delivery's budget began. Full jitter spreads the retries of a backlog that failed together, so a
 * consumer coming back is not hit by all of them at once.
 */
export function nextAttemptDelayMs(
  backoff: BackoffConfig,
  failedAttempts: number,
  answer: { status: number | null; retryAfter: string | undefined },
  random: () => number,
  nowMs: number,
): number {
  if (answer.status === 429 || answer.status === 503) {
    const asked = retryAfterMs(answer.retryAfter, nowMs);
    if (asked !== undefined) return Math.min(asked, backoff.maxMs);
  }
  return backoffDelayMs(backoff, failedAttempts, random);
}
