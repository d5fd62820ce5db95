/**
 * The plumbing shared by the store's background jobs (retention, partition maintenance): a run
 * that never overlaps itself, repeated on an unref'd timer that does not keep the process alive,
 * and stopped by waiting for the run in progress. Each run holds a session advisory lock on one
 * connection, so across instances one runs at a time and the others skip that interval; the lock
 * goes with its connection, so an instance that dies mid-run leaves nothing held.
 */
import { sql, type DatabasePool, type DatabasePoolConnection, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

export interface PeriodicJob<T> {
  /** Runs now (also what the timer calls). Runs never overlap; a second call waits for the first. */
  runOnce(): Promise<T>;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

export interface PeriodicJobOptions<T> {
  /** One run; `signal` is aborted by stop(), for a run that can end early between its steps. */
  run: (signal: AbortSignal) => Promise<T>;
  firstDelayMs: number;
  intervalMs: number;
  /** A failed timer run; the next interval tries again. */
  onError: (error: unknown) => void;
}

export function startPeriodicJob<T>(options: PeriodicJobOptions<T>): PeriodicJob<T> {
  const stopping = new AbortController();
  let current: Promise<T> | null = null;
  let timer: NodeJS.Timeout | null = null;

  function runOnce(): Promise<T> {
    current ??= options.run(stopping.signal).finally(() => {
      current = null;
    });
    return current;
  }

  function schedule(ms: number): void {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      runOnce()
        .catch(options.onError)
        .finally(() => schedule(options.intervalMs));
    }, ms);
    timer.unref();
  }
  schedule(options.firstDelayMs);

  return {
    runOnce,
    async stop() {
      stopping.abort();
      if (timer) clearTimeout(timer);
      await current?.catch(() => undefined);
    },
  };
}

/**
 * Runs `work` on one connection while holding the session advisory lock `lock` (a fragment such
 * as hashtext('name')); answers null, without waiting, when another session holds it.
 */
export function withSessionLock<T>(
  pool: DatabasePool,
  lock: FragmentSqlToken,
  work: (connection: DatabasePoolConnection) => Promise<T>,
): Promise<T | null> {
  return pool.connect(async (connection) => {
    const locked = await connection.oneFirst(sql.type(z.object({ locked: z.boolean() }))`
      SELECT pg_try_advisory_lock(${lock}) AS locked
    `);
    if (!locked) return null;
    try {
      return await work(connection);
    } finally {
      await connection.query(sql.unsafe`SELECT pg_advisory_unlock(${lock})`);
    }
  });
}
