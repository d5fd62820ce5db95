import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKeyedRateLimiter, createRateLimiter } from '../../src/auth/rate-limiter.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';
import { AppError } from '../../src/errors/app-error.ts';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

const limits = {
  read: { capacity: 5, refillPerSecond: 2 },
  write: { capacity: 3, refillPerSecond: 1 },
  replay: { capacity: 2, refillPerSecond: 0.5 },
};

describe('rate limiter', () => {
  it('defaults to 120 reads burst at 20/s, 20 changes at 2/s and 10 replays burst at one per 2 s', () => {
    expect(resolveConfig({}).rateLimits).toEqual({
      read: { capacity: 120, refillPerSecond: 20 },
      write: { capacity: 20, refillPerSecond: 2 },
      replay: { capacity: 10, refillPerSecond: 0.5 },
    });
    expect(
      resolveConfig({ rate_limits: { replay: { capacity: 3, refill_per_second: 0.1 } } }).rateLimits.replay,
    ).toEqual({
      capacity: 3,
      refillPerSecond: 0.1,
    });
  });

  it('allows the burst, then refuses with an integer retry_after of at least 1 s, then refills', () => {
    const c = clock();
    const limiter = createRateLimiter({ limits, now: c.now });
    for (let i = 0; i < 2; i += 1) expect(limiter.take('agent', 'replay')).toEqual({ allowed: true });
    expect(limiter.take('agent', 'replay')).toEqual({ allowed: false, retryAfterSeconds: 2 });
    c.advance(1_000);
    expect(limiter.take('agent', 'replay')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    c.advance(999);
    expect(limiter.take('agent', 'replay').allowed).toBe(false);
    c.advance(1);
    expect(limiter.take('agent', 'replay')).toEqual({ allowed: true });

    for (let i = 0; i < 5; i += 1) limiter.checkRead('agent');
    let thrown: unknown;
    try {
      limiter.checkRead('agent');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1 });
    expect(() => limiter.checkReplay('agent')).toThrow(/replay rate limit/);
  });

  it('keeps one bucket per caller and class', () => {
    const c = clock();
    const limiter = createRateLimiter({ limits, now: c.now });
    limiter.take('a', 'replay');
    limiter.take('a', 'replay');
    expect(limiter.take('a', 'replay').allowed).toBe(false);
    expect(limiter.take('b', 'replay').allowed).toBe(true);
    expect(limiter.take('a', 'read').allowed).toBe(true);
  });

  it('holds at most maxBuckets buckets, however many callers appear', () => {
    const c = clock();
    const limiter = createRateLimiter({ limits, now: c.now, maxBuckets: 100 });
    for (let i = 0; i < 10_000; i += 1) {
      limiter.take(`caller-${i}`, i % 2 === 0 ? 'read' : 'replay');
      expect(limiter.size()).toBeLessThanOrEqual(100);
    }
    // The most recent caller kept its state.
    limiter.take('caller-9999', 'replay');
    expect(limiter.take('caller-9999', 'replay').allowed).toBe(false);
  });

  it('drops idle buckets once they are full again', () => {
    const c = clock();
    const limiter = createRateLimiter({ limits, now: c.now });
    for (let i = 0; i < 50; i += 1) limiter.take(`idle-${i}`, 'read');
    expect(limiter.size()).toBe(50);
    c.advance(400);
    expect(limiter.prune()).toBe(0);
    c.advance(200);
    expect(limiter.prune()).toBe(50);
    expect(limiter.size()).toBe(0);
    for (let i = 0; i < 50; i += 1) limiter.take(`idle-${i}`, 'read');
    c.advance(10_000);
    // Ordinary traffic evicts refilled buckets as it goes, without a prune call.
    for (let i = 0; i < 30; i += 1) limiter.take('busy', 'read');
    expect(limiter.size()).toBeLessThanOrEqual(21);
  });

  it('never allows more than capacity plus what refilled, and never refuses a bucket holding a token', () => {
    fc.assert(
      fc.property(
        fc.record({
          capacity: fc.integer({ min: 1, max: 20 }),
          refillPerSecond: fc.double({ min: 0.05, max: 50, noNaN: true }),
        }),
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 200 }),
        (bucket, gaps) => {
          const c = clock();
          const limiter = createRateLimiter({ limits: { read: bucket, write: bucket, replay: bucket }, now: c.now });
          let model = bucket.capacity;
          let allowed = 0;
          let elapsed = 0;
          for (const gap of gaps) {
            c.advance(gap);
            elapsed += gap;
            model = Math.min(bucket.capacity, model + (gap / 1000) * bucket.refillPerSecond);
            const decision = limiter.take('p', 'read');
            if (model >= 1) {
              expect(decision.allowed).toBe(true);
              model -= 1;
            } else {
              expect(decision.allowed).toBe(false);
              if (!decision.allowed) {
                expect(Number.isInteger(decision.retryAfterSeconds)).toBe(true);
                expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual(1);
                expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual((1 - model) / bucket.refillPerSecond - 1e-6);
              }
            }
            if (decision.allowed) allowed += 1;
          }
          expect(allowed).toBeLessThanOrEqual(
            bucket.capacity + Math.floor((elapsed / 1000) * bucket.refillPerSecond + 1e-9),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a configuration with an empty or never-refilling bucket', () => {
    expect(() => createRateLimiter({ limits: { ...limits, read: { capacity: 0, refillPerSecond: 1 } } })).toThrow(
      /capacity/,
    );
    expect(() => createRateLimiter({ limits: { ...limits, replay: { capacity: 1, refillPerSecond: 0 } } })).toThrow(
      /refill/,
    );
  });
});

describe('keyed rate limiter (rejected deliveries per source address)', () => {
  it('gives each key its own bucket of one size, refilled over time, under the same memory bound', () => {
    const c = clock();
    const limiter = createKeyedRateLimiter({ capacity: 3, refillPerSecond: 3 / 60 }, { now: c.now, maxBuckets: 50 });
    const burst = (key: string): boolean[] => [1, 2, 3, 4].map(() => limiter.take(key).allowed);
    expect(burst('127.0.0.1')).toEqual([true, true, true, false]);
    expect(burst('127.0.0.2')).toEqual([true, true, true, false]);
    c.advance(20_000);
    expect(limiter.take('127.0.0.1').allowed).toBe(true);
    expect(limiter.take('127.0.0.1').allowed).toBe(false);
    for (let i = 0; i < 5_000; i += 1) {
      limiter.take(`source-${i}`);
      expect(limiter.size()).toBeLessThanOrEqual(50);
    }
  });
});
