import { describe, expect, it } from 'vitest';
import { RETRY_AFTER_LIMITS } from '../../generated/constants.ts';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { AppError } from '../../src/errors/app-error.ts';
import { errorEnvelope } from '../../src/errors/error-envelope.ts';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from '../../src/shared/retry-after.ts';

describe('Retry-After', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');

  it('reads delay-seconds or an HTTP date; anything else is undefined', () => {
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs([' 7 ', '9'], now)).toBe(7_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it('caps every wait at the contract maximum, one hour (issue 26.6)', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(RETRY_AFTER_LIMITS.maximum * 1000);
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
    // 3000000 s would overflow Node's 32-bit timer, which then fires at once.
    expect(retryAfterMs('3000000', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs('9'.repeat(400), now)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs('Fri, 31 Dec 9999 23:59:59 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('is capped on what the server sends too: a slow refill cannot ask for more than an hour (issue 26.6)', () => {
    const error = new AppError('rate_limited', 'read rate limit reached', { retryAfterSeconds: 200_000 });
    expect(error.retryAfterSeconds).toBe(RETRY_AFTER_LIMITS.maximum);
    const envelope = errorEnvelope(error, 'wire');
    expect(envelope.error.retry_after).toBe(3600);
    expect(validateErrorEnvelope(envelope)).toBe(true);
  });
});
