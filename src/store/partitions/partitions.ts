/**
 * Time partitions (docs/adr/time-partitions.md): events, deliveries, delivery attempts, replay
 * attempts and search rows are range-partitioned by the event's received_at, one partition of each
 * per day, week or month (store.partition), all five sharing the same ranges, listed in
 * event_partitions.
 *
 * Partitions are made ahead of time: at every start (under the migration lock) and then hourly by
 * the worker role under an advisory lock, so instances never race each other's DDL. A DEFAULT
 * partition catches anything dated outside them, so a missed run costs only speed, never an event.
 * Retention drops a partition once all of it is past max_age: a few catalog changes, whatever the
 * number of rows.
 */
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { PartitionUnit } from '../../../generated/constants.ts';
import type { Logger } from '../../log/logger.ts';
import { startPeriodicJob, withSessionLock } from './periodic-job.ts';

/**
 * How far ahead partitions exist. A week of days (or a month of weeks, a quarter of months) means
 * a worker that is down for days still leaves ingest writing to proper partitions.
 */
const AHEAD: Record<PartitionUnit, string> = { day: '7 days', week: '28 days', month: '3 months' };

/** The advisory lock one maintenance run holds (hashtext of a name no other lock uses). */
const MAINTENANCE_LOCK = sql.fragment`hashtext('switchboard-partitions')`;

/**
 * DDL on a partitioned table waits for every query reading it; a maintenance statement that waited
 * long would make the queries behind it wait too. It gives up instead and tries again next run.
 */
const DDL_LOCK_TIMEOUT = sql.fragment`'2s'`;

/** Tables with a partition per range, dependants first: the order they are dropped in. */
const DEPENDANT_TABLES = ['delivery_attempts', 'event_search', 'replay_attempts', 'event_external_ids'] as const;

const partitionRow = z.object({ lower_bound: z.string(), upper_bound: z.string(), suffix: z.string() });
type PartitionRow = z.infer<typeof partitionRow>;

/** Whether this database has the partitioned schema (migration 0011). */
export async function hasPartitions(db: CommonQueryMethods): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ partitioned: z.boolean() }))`
    SELECT to_regclass('event_partitions') IS NOT NULL AS partitioned
  `);
}

/**
 * Makes the partitions of every period from now through the time ahead, or, given `only`, of the
 * one period holding that time. Answers how many ranges it created.
 */
export async function ensurePartitions(
  db: CommonQueryMethods,
  unit: PartitionUnit,
  only: string | null = null,
): Promise<number> {
  const range =
    only === null
      ? sql.fragment`now(), now() + ${AHEAD[unit]}::interval`
      : sql.fragment`${only}::timestamptz, ${only}::timestamptz`;
  return db.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET LOCAL lock_timeout = ${DDL_LOCK_TIMEOUT}`);
    return tx.oneFirst(sql.type(z.object({ created: z.number() }))`
      SELECT switchboard_ensure_partitions(${unit}, ${range}) AS created
    `);
  });
}

export interface DroppedPartitions {
  partitions: number;
  /** From the planner's statistics: counting the rows would cost what dropping them saves. */
  eventsEstimate: number;
}

/**
 * Drops every partition whose whole range is before the cutoff, oldest first, each in one short
 * transaction with its external-id keys (migration 0013 put them in partitions of the same ranges):
 * a few catalog changes, whatever the number of rows.
 */
export async function dropPartitionsBefore(
  db: CommonQueryMethods,
  cutoff: string,
  options: { stopped: () => boolean },
): Promise<DroppedPartitions> {
  const expired = await db.any(sql.type(partitionRow)`
    SELECT lower_bound::text, upper_bound::text, suffix FROM event_partitions
    WHERE upper_bound <= ${cutoff}::timestamptz ORDER BY lower_bound
  `);
  const result: DroppedPartitions = { partitions: 0, eventsEstimate: 0 };
  for (const partition of expired) {
    if (options.stopped()) break;
    result.eventsEstimate += await dropPartition(db, partition);
    result.partitions += 1;
  }
  return result;
}

async function dropPartition(db: CommonQueryMethods, partition: PartitionRow): Promise<number> {
  const name = (table: string) => sql.identifier([`${table}_p${partition.suffix}`]);
  return db.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET LOCAL lock_timeout = ${DDL_LOCK_TIMEOUT}`);
    const estimate = await tx.oneFirst(sql.type(z.object({ rows: z.number() }))`
      SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = ${`events_p${partition.suffix}`}::regclass
    `);
    for (const table of DEPENDANT_TABLES) await tx.query(sql.unsafe`DROP TABLE ${name(table)}`);
    // A referenced partition is detached before it is dropped; the detach checks that nothing
    // references it any more, which the drops above made true.
    await tx.query(sql.unsafe`ALTER TABLE deliveries DETACH PARTITION ${name('deliveries')}`);
    await tx.query(sql.unsafe`DROP TABLE ${name('deliveries')}`);
    await tx.query(sql.unsafe`ALTER TABLE events DETACH PARTITION ${name('events')}`);
    await tx.query(sql.unsafe`DROP TABLE ${name('events')}`);
    await tx.query(sql.unsafe`DELETE FROM event_partitions WHERE suffix = ${partition.suffix}`);
    return Math.round(estimate);
  });
}

export interface PartitionMaintenance {
  /** One run now (what the timer calls); answers the ranges created, or null when another instance held the lock. */
  runOnce(): Promise<number | null>;
  stop(): Promise<void>;
}

/** Hourly: enough for days, and a run is a few catalog lookups when nothing is due. */
const MAINTENANCE_INTERVAL_MS = 3_600_000;

export function startPartitionMaintenance(options: {
  pool: DatabasePool;
  unit: PartitionUnit;
  logger: Logger;
  intervalMs?: number;
}): PartitionMaintenance {
  const { pool, unit, logger } = options;
  return startPeriodicJob({
    run: () =>
      withSessionLock(pool, MAINTENANCE_LOCK, async (connection) => {
        const created = await ensurePartitions(connection, unit);
        if (created > 0) logger.info({ created, unit }, 'created event partitions');
        return created;
      }),
    firstDelayMs: options.intervalMs ?? MAINTENANCE_INTERVAL_MS,
    intervalMs: options.intervalMs ?? MAINTENANCE_INTERVAL_MS,
    onError: (error) => logger.warn({ err: error }, 'partition maintenance failed; will retry next interval'),
  });
}
