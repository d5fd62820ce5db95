import { isDatabaseUnavailable } from '../../errors/database-unavailable.ts';
import type { Logger } from '../../log/logger.ts';
import { commitBatch, waitInQueue, type BatchCommit, type Waiting } from '../../shared/batch-commit.ts';
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
  /** Told the size of each flush as it starts (ingest-pressure.ts). */
  onFlush?: ((events: number) => void) | undefined;
}

export interface GroupCommitter {
  /** Resolves only after this event's row is committed (or found to be a duplicate). */
  submit(event: NewEvent): Promise<InsertResult>;
  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

const DEFAULT_MAX_BATCH = 256;
const DEFAULT_MAX_CONCURRENT_FLUSHES = 2;

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
  const queue: Waiting<NewEvent, InsertResult>[] = [];
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

  // One unstorable event must not take its neighbours down with it: a failed batch is retried
  // event by event so only the bad one fails (not when the database is down: that fails them all).
  const insert: BatchCommit<NewEvent, InsertResult> = {
    all: (events) => options.store.insertMany(events),
    one: async (event) => {
      const [result] = await options.store.insertMany([event]);
      if (result === undefined) throw new Error('insertMany returned no result for one event');
      return result;
    },
    isolate: (error) => !isDatabaseUnavailable(error),
    onIsolate: (error, size) =>
      options.logger.warn({ err: error, batch: size }, 'batch insert failed; retrying events one by one'),
  };

  const flush = async (batch: Waiting<NewEvent, InsertResult>[]): Promise<void> => {
    inFlight += 1;
    options.onFlush?.(batch.length);
    try {
      await commitBatch(batch, insert);
    } finally {
      inFlight -= 1;
      schedule();
      settleIdle();
    }
  };

  return {
    submit(event) {
      const committed = waitInQueue(queue, event);
      schedule();
      return committed;
    },
    drain() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
