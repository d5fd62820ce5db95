import { Redis } from 'ioredis';
import type { ConnectionState } from '../../generated/constants.ts';
import type { Logger } from '../log/logger.ts';
import { backoffDelayMs } from '../shared/backoff.ts';

export type QueueConnectionState = ConnectionState;

/** One running queue consumer, as the queue sources (and list_providers) see it. */
export interface QueueSource {
  readonly name: string;
  state(): QueueConnectionState;
  stop(): Promise<void>;
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface BackoffOptions {
  /** First retry delay; doubles per failed attempt up to maxMs. */
  minMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { minMs: 200, maxMs: 10_000 };

export function backoffDelay(attempt: number, backoff: BackoffOptions): number {
  return backoffDelayMs({ initialMs: backoff.minMs, maxMs: backoff.maxMs, jitter: 'none' }, attempt);
}

/**
 * One connection per queue provider: a subscribed connection can run nothing else, and a stream
 * consumer's blocking XREADGROUP holds its connection for seconds at a time.
 *
 * ioredis reconnects by itself (retryStrategy never gives up, so a Redis that is down for an hour
 * is picked up again when it returns); commands wait in its offline queue meanwhile rather than
 * failing, so a consumer loop simply resumes.
 */
function openRedis(url: string, name: string, logger: Logger, backoff: BackoffOptions): Redis {
  const redis = new Redis(url, {
    connectionName: `switchboard:${name}`,
    lazyConnect: true,
    maxRetriesPerRequest: null,
    retryStrategy: (times) => backoffDelay(times, backoff),
  });
  let lastError = '';
  // Without a listener ioredis prints every connection error; one line per distinct error is enough.
  redis.on('error', (err: Error) => {
    if (err.message === lastError) return;
    lastError = err.message;
    logger.warn({ err }, 'redis connection error');
  });
  redis.on('ready', () => {
    if (lastError !== '') logger.info('redis connection re-established');
    lastError = '';
  });
  return redis;
}

/**
 * ioredis' status, reduced to what list_providers shows. While Redis is unreachable the state
 * alternates between disconnected (waiting for the next retry) and connecting (an attempt is in
 * progress), so a long outage reads as disconnected most of the time.
 */
function connectionState(redis: Redis | undefined, stopped: boolean): QueueConnectionState {
  if (redis === undefined || stopped) return 'disconnected';
  switch (redis.status) {
    case 'ready':
      return 'connected';
    case 'wait':
    case 'connecting':
    case 'connect':
      return 'connecting';
    default:
      return 'disconnected';
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The lifecycle every queue consumer shares: its connection, and stopping it. */
export interface Consumer {
  readonly redis: Redis;
  /** Aborted by stop(): ends any backoff wait at once. */
  readonly signal: AbortSignal;
  stopped(): boolean;
  /**
   * The consumer as a QueueSource. stop() marks it stopped, aborts its waits and drops the
   * connection (which interrupts a blocking read), then waits for `finished` (a consumer loop).
   */
  source(name: string, finished?: Promise<unknown>): QueueSource;
}

export function openConsumer(url: string, name: string, logger: Logger, backoff: BackoffOptions): Consumer {
  const redis = openRedis(url, name, logger, backoff);
  const abort = new AbortController();
  let stopped = false;
  return {
    redis,
    signal: abort.signal,
    stopped: () => stopped,
    source: (sourceName, finished) => ({
      name: sourceName,
      state: () => connectionState(redis, stopped),
      async stop() {
        if (stopped) return;
        stopped = true;
        abort.abort();
        redis.disconnect();
        await finished;
      },
    }),
  };
}
