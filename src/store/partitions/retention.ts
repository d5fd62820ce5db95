/**
 * Retention: a background job that deletes events older than max_age and beyond the newest
 * max_events. A time partition wholly past max_age is dropped (partitions.ts); other rows are
 * deleted in small batches, each its own short statement, so ingest and readers never wait behind
 * one long delete; replay attempts, deliveries, search rows and external-id keys go with their events
 * (a foreign key for replay attempts, statement triggers for the rest: migrations 0012, 0014).
 *
 * Every worker process runs this job; a run holds a session advisory lock, so one instance prunes
 * at a time and the others skip that interval. The lock goes with its connection: an instance that
 * dies mid-run leaves nothing held, and the next interval of any other instance takes over.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { SwitchboardConfigWithDefaults } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import type { Logger } from '../../log/logger.ts';
import { dropPartitionsBefore, hasPartitions } from './partitions.ts';
import { startPeriodicJob, withSessionLock } from './periodic-job.ts';
import { utcColumn, utcText } from '../sql/timestamps.ts';

/**
 * retention: as config validation leaves it, interval_seconds filled in from the schema.
 * @internal outside src/, only tests or benches use it
 */
export type RetentionConfig = SwitchboardConfigWithDefaults['retention'];

export interface RetentionOptions {
  pool: DatabasePool;
  config: RetentionConfig;
  logger: Logger;
  /** Rows per DELETE. Default 1000. */
  batchSize?: number;
  /** Delay before the first run. Default 10 s, so startup is not slowed by a large first prune. */
  initialDelayMs?: number;
}

/** @internal outside src/, only tests or benches use it */
export interface RetentionResult {
  deletedByAge: number;
  deletedByCount: number;
  /** Partitions dropped whole because all of their range was past max_age (their rows are not counted above). */
  droppedPartitions?: number;
  /** Present when another instance held the retention lock, so this run deleted nothing. */
  skipped?: true;
}

export interface RetentionJob {
  /** Prune now (also what the timer calls). Runs never overlap; a second call waits for the first. */
  runOnce(): Promise<RetentionResult>;
  /** Stops the timer and waits for a run in progress (it ends after its current batch). */
  stop(): Promise<void>;
}

const UNIT_MS: Record<string, number> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * "30d", "12h", "90m", "45s", "2w" → milliseconds.
 * @internal outside src/, only tests or benches use it
 */
export function parseDuration(text: string): number {
  const match = /^\s*(\d+)\s*([smhdw])\s*$/.exec(text);
  const amount = match?.[1];
  const unit = match?.[2];
  const ms = amount !== undefined && unit !== undefined ? Number(amount) * (UNIT_MS[unit] ?? Number.NaN) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw invalidArgument(
      `retention.max_age must be a positive number and a unit (s, m, h, d, w), e.g. 30d; got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

const keyRow = z.object({ received_at_utc: z.string(), id: z.string() });

/** The advisory lock one retention run holds (hashtext of a name no other lock uses). */
const RETENTION_LOCK = sql.fragment`hashtext('switchboard-retention')`;

// One closure over the validated limits that the batched deletes and the run share
// (the timer, single flight and lock are periodic-job.ts's).
export function startRetention(options: RetentionOptions): RetentionJob {
  const { pool, logger } = options;
  const { config } = options;
  const maxAgeMs = config.max_age === undefined ? null : parseDuration(config.max_age);
  const maxEvents = config.max_events ?? null;
  if (maxEvents !== null && !(Number.isSafeInteger(maxEvents) && maxEvents >= 0)) {
    throw invalidArgument('retention.max_events must be a non-negative integer');
  }
  const intervalSeconds = config.interval_seconds;
  if (!(Number.isFinite(intervalSeconds) && intervalSeconds > 0)) {
    throw invalidArgument('retention.interval_seconds must be a positive number');
  }
  const batchSize = options.batchSize ?? 1000;
  const enabled = maxAgeMs !== null || maxEvents !== null;

  /** Deletes every event at or before the key (in list order), oldest first, a batch at a time. */
  async function deleteThrough(
    db: CommonQueryMethods,
    cutoff: { receivedAt: string; id: string | null },
    stopping: AbortSignal,
  ): Promise<number> {
    let total = 0;
    while (!stopping.aborted) {
      // The subselect walks events_received_idx from the oldest end and stops after batchSize rows,
      // so each statement touches (and locks) only the rows it deletes.
      const boundary =
        cutoff.id === null
          ? sql.fragment`events.received_at < ${cutoff.receivedAt}::timestamptz`
          : sql.fragment`(events.received_at, events.id) <= (${cutoff.receivedAt}::timestamptz, ${cutoff.id}::uuid)`;
      const result = await db.query(sql.unsafe`
        DELETE FROM events
        WHERE (events.id, events.received_at) IN (
          SELECT events.id, events.received_at FROM events
          WHERE ${boundary}
          ORDER BY events.received_at, events.id
          LIMIT ${batchSize}
        )
      `);
      total += result.rowCount;
      if (result.rowCount < batchSize) break;
      // Let other work on this process and the pool get a turn between batches.
      await delay(0);
    }
    return total;
  }

  /** One run, on one connection: the lock is a session's, so the deletes run where it is held. */
  async function prune(stopping: AbortSignal): Promise<RetentionResult> {
    const result = await withSessionLock(pool, RETENTION_LOCK, (connection) => pruneOn(connection, stopping));
    return result ?? { deletedByAge: 0, deletedByCount: 0, skipped: true };
  }

  async function pruneOn(db: CommonQueryMethods, stopping: AbortSignal): Promise<RetentionResult> {
    const result: RetentionResult = { deletedByAge: 0, deletedByCount: 0 };
    if (maxAgeMs !== null) {
      // The database's clock decides what is old, the same clock that stamped received_at.
      const cutoff = await db.oneFirst(sql.type(z.object({ cutoff: z.string() }))`
        SELECT ${utcText(sql.fragment`(now() - make_interval(secs => ${maxAgeMs / 1000}))`)} AS cutoff
      `);
      // Whole partitions past the cutoff go first, at a cost that does not grow with their rows;
      // what is left (the partition the cutoff falls in, the DEFAULT partition) goes by row.
      if (await hasPartitions(db)) {
        const dropped = await dropPartitionsBefore(db, cutoff, { stopped: () => stopping.aborted });
        if (dropped.partitions > 0) {
          result.droppedPartitions = dropped.partitions;
          logger.info(dropped, 'retention dropped event partitions');
        }
      }
      result.deletedByAge = await deleteThrough(db, { receivedAt: cutoff, id: null }, stopping);
    }
    if (maxEvents !== null && !stopping.aborted) {
      // The newest event that no longer fits; it and everything older go.
      const key = await db.maybeOne(sql.type(keyRow)`
        SELECT ${utcColumn('events', 'received_at')} AS received_at_utc, events.id
        FROM events
        ORDER BY events.received_at DESC, events.id DESC
        OFFSET ${maxEvents} LIMIT 1
      `);
      if (key) {
        result.deletedByCount = await deleteThrough(db, { receivedAt: key.received_at_utc, id: key.id }, stopping);
      }
    }
    if (result.deletedByAge + result.deletedByCount > 0) logger.info(result, 'retention deleted events');
    return result;
  }

  if (!enabled) {
    return { runOnce: () => Promise.resolve({ deletedByAge: 0, deletedByCount: 0 }), stop: () => Promise.resolve() };
  }
  return startPeriodicJob({
    run: prune,
    firstDelayMs: options.initialDelayMs ?? 10_000,
    intervalMs: intervalSeconds * 1000,
    onError: (error) => logger.error({ err: error }, 'retention run failed; will retry next interval'),
  });
}
