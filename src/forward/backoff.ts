/** When a failed delivery is tried again. */

export interface BackoffConfig {
  initialMs: number;
  maxMs: number;
}

/**
 * Exponential backoff with full jitter: a random wait up to initial × 2^(n−1), capped at max, where
 * n counts the attempts since the delivery's budget began. Full jitter spreads the retries of a
 * backlog that failed together, so a consumer coming back is not hit by all of them at once.
 */
export function backoffDelayMs(backoff: BackoffConfig, failedAttempts: number, random: () => number): number {
  const exponent = Math.max(0, failedAttempts - 1);
  // 2^exponent overflows to Infinity long before it matters; min() caps it either way.
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(exponent, 52));
  return Math.floor(random() * ceiling);
}

/**
 * A Retry-After header in milliseconds from now: delay-seconds or an HTTP date. Undefined when
 * absent or unreadable (the backoff applies then).
 */
export function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** The wait before the next attempt: the consumer's Retry-After on 429 and 503, within max_ms, else the backoff. */
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
