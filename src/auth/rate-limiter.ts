import { AppError } from '../errors/app-error.ts';
import type { BucketConfig } from '../config/resolve-config.ts';

export type RateClass = 'read' | 'write' | 'replay';

type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiterOptions {
  /** ResolvedConfig.rateLimits. */
  limits: Readonly<Record<RateClass, BucketConfig>>;
  /** Most buckets kept; the least recently used go first. Default 10,000. */
  maxBuckets?: number;
  /** Milliseconds, monotonic; injectable so tests can move the clock. Default performance.now. */
  now?: () => number;
}

export interface RateLimiter {
  /** Takes one token from the caller's bucket of that class. */
  take(caller: string, rateClass: RateClass): RateDecision;
  /** take(), throwing AppError rate_limited (with retry_after) when the bucket is empty. */
  check(caller: string, rateClass: RateClass): void;
  /** check(caller, 'read'), bound, for wiring into surfaces. */
  readonly checkRead: (caller: string) => void;
  /** check(caller, 'write'), bound: the changes /api makes (retry, retry-dead, pause, resume). */
  readonly checkWrite: (caller: string) => void;
  /** check(caller, 'replay'), bound, for wiring into the ReplayService. */
  readonly checkReplay: (caller: string) => void;
  /** Buckets currently held in memory. */
  size(): number;
  /** Drops every bucket that has refilled completely; returns how many went. */
  prune(): number;
}

interface Bucket<C extends string> {
  rateClass: C;
  tokens: number;
  updatedAt: number;
}

const DEFAULT_MAX_BUCKETS = 10_000;

interface BucketStore<C extends string> {
  readonly take: (key: string, rateClass: C) => RateDecision;
  readonly prune: () => number;
  readonly size: () => number;
}

/**
 * A token bucket per (key, class). A bucket that has refilled completely holds no information
 * (a fresh one is identical), so full buckets are dropped on access, and the Map's insertion
 * order doubles as an LRU: the map never holds more than maxBuckets, however many identities
 * (tokens, or client addresses for failed logins) show up.
 */
function createBucketStore<C extends string>(
  limits: Readonly<Record<C, BucketConfig>>,
  options: { maxBuckets?: number; now?: () => number },
): BucketStore<C> {
  const now = options.now ?? (() => performance.now());
  const maxBuckets = options.maxBuckets ?? DEFAULT_MAX_BUCKETS;
  for (const [name, limit] of Object.entries<BucketConfig>(limits)) {
    if (!(limit.capacity >= 1) || !(limit.refillPerSecond > 0)) {
      throw new Error(`rate limit ${name}: capacity must be at least 1 and refill_per_second above 0`);
    }
  }
  const buckets = new Map<string, Bucket<C>>();

  const take = (caller: string, rateClass: C): RateDecision => {
    const limit = limits[rateClass];
    const key = `${rateClass}\u0000${caller}`;
    const at = now();
    const existing = buckets.get(key);
    let tokens = limit.capacity;
    if (existing !== undefined) {
      buckets.delete(key);
      tokens = Math.min(limit.capacity, existing.tokens + ((at - existing.updatedAt) / 1000) * limit.refillPerSecond);
    }
    if (tokens < 1) {
      buckets.set(key, { rateClass, tokens, updatedAt: at });
      evict();
      const seconds = Math.ceil((1 - tokens) / limit.refillPerSecond);
      return { allowed: false, retryAfterSeconds: Math.max(1, seconds) };
    }
    const left = tokens - 1;
    buckets.set(key, { rateClass, tokens: left, updatedAt: at });
    evict();
    return { allowed: true };
  };

  const isFull = (bucket: Bucket<C>, at: number): boolean => {
    const limit = limits[bucket.rateClass];
    return bucket.tokens + ((at - bucket.updatedAt) / 1000) * limit.refillPerSecond >= limit.capacity;
  };

  const evict = (): void => {
    while (buckets.size > maxBuckets) {
      const oldest = buckets.keys().next();
      if (oldest.done === true) return;
      buckets.delete(oldest.value);
    }
    // Amortised idle eviction: the least recently used buckets are the likeliest to be full again.
    const at = now();
    for (let i = 0; i < 2; i += 1) {
      const oldest = buckets.entries().next();
      if (oldest.done === true || !isFull(oldest.value[1], at)) return;
      buckets.delete(oldest.value[0]);
    }
  };

  const prune = (): number => {
    const at = now();
    let dropped = 0;
    for (const [key, bucket] of buckets) {
      if (isFull(bucket, at)) {
        buckets.delete(key);
        dropped += 1;
      }
    }
    return dropped;
  };

  return { take, prune, size: () => buckets.size };
}

/** One bucket per key (a client address, say), all of one size, under the same memory bound. */
export interface KeyedRateLimiter {
  take(key: string): RateDecision;
  /** Buckets currently held in memory. */
  size(): number;
}

export function createKeyedRateLimiter(
  limit: BucketConfig,
  options: Omit<RateLimiterOptions, 'limits'> = {},
): KeyedRateLimiter {
  const store = createBucketStore({ key: limit }, options);
  return { take: (key) => store.take(key, 'key'), size: store.size };
}

/** The read and replay buckets of each caller (token name). */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { take, prune, size } = createBucketStore(options.limits, options);

  const check = (caller: string, rateClass: RateClass): void => {
    const decision = take(caller, rateClass);
    if (!decision.allowed) {
      throw new AppError(
        'rate_limited',
        `${rateClass} rate limit reached; retry after ${decision.retryAfterSeconds} s`,
        {
          retryAfterSeconds: decision.retryAfterSeconds,
        },
      );
    }
  };

  return {
    take,
    check,
    checkRead: (caller) => check(caller, 'read'),
    checkWrite: (caller) => check(caller, 'write'),
    checkReplay: (caller) => check(caller, 'replay'),
    size,
    prune,
  };
}
