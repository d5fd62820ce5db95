import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore, InsertResult, NewEvent } from './event-store.ts';

export interface GroupCommitOptions {
  store: Pick<EventStore, 'insertMany'>;
  logger: Logger;
  /** Most events in one INSERT statement. */
  maxBatch?: number | undefined;
  /**
   * Batches in flight at once. More than one lets the next statement travel to the database while
   * the previous commit waits for its WAL flush; PostgreSQL then flushes their commits together.
   */
  maxConcurrentFlushes?: number | undefined;
}

export interface GroupCommitter {
  /** Resolves only after this event's row is committed (or found to be a duplicate). */
  submit(event: NewEvent): Promise<InsertResult>;
  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

interface Pending {
  event: NewEvent;
  resolve: (result: InsertResult) => void;
  reject: (error: unknown) => void;
}

export const DEFAULT_MAX_BATCH = 256;
export const DEFAULT_MAX_CONCURRENT_FLUSHES = 2;

/**
 * Group commit: concurrent deliveries share one INSERT statement and one transaction, so a burst
 * of N requests costs about one durable commit instead of N.
 *
 * There is no timer. A flush starts on the next turn of the event loop (setImmediate), after every
 * request already parsed in this turn has queued its event; while the allowed number of flushes is
 * in flight, new events accumulate and go out together as soon as one finishes. Under light load a
 * lone event therefore waits for nothing, and under heavy load batches grow by themselves.
 */
export function createGroupCommitter(options: GroupCommitOptions): GroupCommitter {
  const maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
  const maxInFlight = Math.max(1, options.maxConcurrentFlushes ?? DEFAULT_MAX_CONCURRENT_FLUSHES);
  const queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;
  let idleWaiters: (() => void)[] = [];

  const schedule = (): void => {
    if (scheduled || queue.length === 0 || inFlight >= maxInFlight) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      while (queue.length > 0 && inFlight < maxInFlight) void flush(queue.splice(0, maxBatch));
    });
  };

  const settleIdle = (): void => {
    if (queue.length > 0 || inFlight > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const waiter of waiters) waiter();
  };

  const flush = async (batch: Pending[]): Promise<void> => {
    inFlight += 1;
    try {
      await commitBatch(batch);
    } finally {
      inFlight -= 1;
      schedule();
      settleIdle();
    }
  };

  const commitBatch = async (batch: Pending[]): Promise<void> => {
    let results: InsertResult[];
    try {
      results = await options.store.insertMany(batch.map((p) => p.event));
    } catch (error: unknown) {
      if (batch.length > 1 && !isDatabaseUnavailable(error)) {
        // One unstorable event must not take its neighbours down with it: retry them one by one so
        // only the bad one fails.
        options.logger.warn({ err: error, batch: batch.length }, 'batch insert failed; retrying events one by one');
        await Promise.all(batch.map((p) => commitBatch([p])));
        return;
      }
      for (const p of batch) p.reject(error);
      return;
    }
    if (results.length !== batch.length) {
      const error = new Error(`insertMany returned ${results.length} results for ${batch.length} events`);
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const result = results[i];
      if (result !== undefined) p.resolve(result);
    });
  };

  return {
    submit(event) {
      return new Promise<InsertResult>((resolve, reject) => {
        queue.push({ event, resolve, reject });
        schedule();
      });
    },
    drain() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
