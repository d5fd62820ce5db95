/**
 * Reading a Retry-After header, for the server (forwarding honours a consumer's) and for
 * `switchboard listen` (it honours its server's and its local app's). Whatever the header says,
 * the wait is capped at the contract's maximum (RETRY_AFTER_LIMITS, one hour): a larger number
 * would overflow Node's 32-bit timer, which then fires at once, and a client would hammer the very
 * server that asked it to wait.
 */
import { RETRY_AFTER_LIMITS } from '../../generated/constants.ts';

/** The longest wait anything in switchboard takes from a Retry-After, in ms. */
export const MAX_RETRY_AFTER_MS = RETRY_AFTER_LIMITS.maximum * 1000;

/**
 * A Retry-After header in milliseconds from now: delay-seconds or an HTTP date, capped at
 * MAX_RETRY_AFTER_MS. Undefined when absent or unreadable (the caller's backoff applies then).
 */
export function retryAfterMs(header: string | readonly string[] | undefined, nowMs: number): number | undefined {
  const first = typeof header === 'string' ? header : header?.[0];
  if (first === undefined) return undefined;
  const text = first.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // Every HTTP-date form starts with the day's name; Date.parse would also take "-5" or "2".
    const at = /^[a-z]/i.test(text) ? Date.parse(text) : NaN;
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - nowMs);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
