/**
 * Time partitions: made ahead, by one instance at a time; anything dated outside them still lands
 * (DEFAULT); retention drops a partition wholly past max_age with everything hanging off its
 * events, deletes by row what is only partly past, and a provider's retry of a dropped event is
 * stored anew; id lookups read the partition the id's time points at.
 */
import { sql, type DatabaseTransactionConnection, type QuerySqlToken } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { ensurePartitions, startPartitionMaintenance } from '../../src/store/partitions/partitions.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import { startRetention } from '../../src/store/partitions/retention.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { partitionsOf } from './partition-names.ts';

let db: TestDatabase;
let store: PgEventStore;

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool, { forwardRulesFor: () => ['rule-a'] });
});
afterAll(() => db.close());

/** Every table with a partition per range: events and each of its dependants. */
const PARTITIONED_TABLES = [
  'events',
  'deliveries',
  'delivery_attempts',
  'replay_attempts',
  'event_search',
  'event_external_ids',
] as const;

const rangeRow = z.object({ lower: z.string(), upper: z.string(), suffix: z.string() });
const ranges = () =>
  db.pool.any(sql.type(rangeRow)`
    SELECT to_char(lower_bound AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS lower,
      to_char(upper_bound AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS upper, suffix
    FROM event_partitions ORDER BY lower_bound
  `);

const utcDay = (offsetDays: number): string =>
  new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/**
 * An event carrying `externalId`, stamped `at` (ms; null: the column's clock default) instead of
 * by the column's clock default, written as the store's insert writes it (event-insert.ts, since
 * migration 0021): left out when the dedupe lookup finds its key, its key written by the same
 * statement. `lookup: false` writes it without asking, as two racing writers' statements both do
 * once their lookups have missed each other.
 */
const insertKeyAt = (at: number | null, externalId: string, lookup = true): QuerySqlToken => {
  const stamp =
    at === null ? sql.fragment`clock_timestamp()` : sql.fragment`${new Date(at).toISOString()}::timestamptz`;
  const unless = lookup
    ? sql.fragment`WHERE NOT (switchboard_external_ids_stored(ARRAY['github'], ARRAY[${externalId}], ${stamp}))[1]`
    : sql.fragment``;
  return sql.unsafe`
    WITH inserted AS (
      INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, headers, payload, external_id, received_at)
      SELECT gen_random_uuid(), 'github', 'push', 'open', false, 'open', '{}'::jsonb, '\\x7b7d'::bytea, ${externalId}, ${stamp}
      ${unless}
      RETURNING id, provider, external_id, received_at
    )
    INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
    SELECT provider, external_id, id, received_at FROM inserted
    RETURNING event_id AS id
  `;
};

/** A promise and the function that settles it, for holding a transaction open until a test says. */
const signal = (): { done: Promise<void>; fire: () => void } => {
  let fire: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { done, fire };
};

/** Runs `work` in a transaction and keeps it open, with its locks, until `release` is called. */
async function openTransaction(
  work: (tx: DatabaseTransactionConnection) => Promise<unknown>,
): Promise<{ release: () => Promise<void> }> {
  const held = signal();
  const worked = signal();
  const transaction = db.pool.transaction(async (tx) => {
    await work(tx);
    worked.fire();
    await held.done;
  });
  await Promise.race([worked.done, transaction]);
  return {
    release: async () => {
      held.fire();
      await transaction;
    },
  };
}

/** Whether `query` is still unsettled half a second on: it waits for a lock another transaction holds. */
async function stillWaiting(query: Promise<unknown>): Promise<boolean> {
  let settled = false;
  const settle = (): void => {
    settled = true;
  };
  void query.then(settle, settle);
  await new Promise((resolve) => setTimeout(resolve, 500));
  return !settled;
}

/** Where a row of `table` with this event id lives. */
const partitionOf = (table: string, column: string, id: string) =>
  db.pool.maybeOneFirst(sql.type(z.object({ name: z.string() }))`
    SELECT tableoid::regclass::text AS name FROM ${sql.identifier([table])} WHERE ${sql.identifier([column])} = ${id}
  `);

async function moveTo(id: string, at: string): Promise<void> {
  // The foreign keys follow the move (ON UPDATE CASCADE): dependants change partition too.
  await db.pool.query(sql.unsafe`UPDATE events SET received_at = ${at}::timestamptz WHERE id = ${id}`);
}

describe('time partitions', () => {
  it('are made at start for today and the week ahead, one range per UTC day for all six tables', async () => {
    const made = await ranges();
    expect(made.map((range) => range.lower)).toEqual(Array.from({ length: 8 }, (_, i) => utcDay(i)));
    for (const range of made) expect(range.upper > range.lower).toBe(true);
    const tables = await partitionsOf(db.pool, PARTITIONED_TABLES);
    expect(tables).toHaveLength(6 * (made.length + 1));
    // Each keys partition has its own unique index: the parent cannot have one without received_at.
    const keyIndexes = await db.pool.anyFirst(sql.type(z.object({ name: z.string() }))`
      SELECT indexrelid::regclass::text AS name FROM pg_index
      WHERE indisunique AND indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'event_external_ids'::regclass)
    `);
    expect([...keyIndexes].sort()).toEqual(
      ['event_external_ids_default_key', ...made.map((range) => `event_external_ids_p${range.suffix}_key`)].sort(),
    );
    expect(tables).toContain('events_default');
    expect(tables).toContain(`deliveries_p${made[0]?.suffix ?? ''}`);
  });

  it('a maintenance run by two instances at once makes each range once; a later unit fills only the gaps', async () => {
    const pools = await Promise.all([1, 2].map(() => createDatabasePool(db.url, { maximumPoolSize: 1 })));
    try {
      await db.pool.query(
        sql.unsafe`SELECT switchboard_ensure_partitions('day', now() + interval '8 days', now() + interval '8 days')`,
      );
      const runs = pools.map((pool) => startPartitionMaintenance({ pool, unit: 'week', logger: silentLogger }));
      const results = await Promise.all(runs.map((run) => run.runOnce()));
      await Promise.all(runs.map((run) => run.stop()));
      // One run did the work (or both in turn found nothing left); never an error, never an overlap.
      expect(results.some((created) => created !== null && created > 0)).toBe(true);
      const made = await ranges();
      for (const [index, range] of made.entries()) {
        const next = made[index + 1];
        if (next) expect(next.lower >= range.upper).toBe(true);
      }
      // The day partitions already made stay; weeks start where they end.
      expect(made.filter((range) => range.lower >= utcDay(0) && range.upper <= utcDay(9))).toHaveLength(9);
      expect(await ensurePartitions(db.pool, 'week')).toBe(0);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('an event dated far outside every partition still lands, in DEFAULT, with its deliveries', async () => {
    const past = (await store.insert(newEvent({ externalId: 'far-past' }))).event;
    const future = (await store.insert(newEvent({ externalId: 'far-future' }))).event;
    await moveTo(past.id, '1999-01-01T00:00:00Z');
    await moveTo(future.id, '2199-01-01T00:00:00Z');
    expect(await partitionOf('events', 'id', past.id)).toBe('events_default');
    expect(await partitionOf('deliveries', 'event_id', future.id)).toBe('deliveries_default');
    expect((await store.get(past.id))?.receivedAt).toBe('1999-01-01T00:00:00.000000Z');
    // Its key followed the move. A retry looks no further than the dedupe window (7 days, migration
    // 0021), so one that far from its first delivery is stored as a new event.
    expect(await partitionOf('event_external_ids', 'event_id', future.id)).toBe('event_external_ids_default');
    expect((await store.insert(newEvent({ externalId: 'far-future' }))).duplicate).toBe(false);
  });

  it("an event's external-id key and deliveries follow it when it moves and go with it when it is deleted", async () => {
    const keyOf = (externalId: string) =>
      db.pool.maybeOne(sql.type(z.object({ event_id: z.string(), at: z.string() }))`
        SELECT event_id, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS at
        FROM event_external_ids WHERE provider = 'github' AND external_id = ${externalId}
      `);
    const { event } = await store.insert(newEvent({ provider: 'github', externalId: 'moved-then-deleted' }));
    const other = (await store.insert(newEvent({ provider: 'github', externalId: 'left-alone' }))).event;
    while ((await indexQueuedEvents(db.pool, 100)) > 0);
    await moveTo(event.id, '2199-01-01T00:00:00Z');
    // Its search row follows too (a trigger since migration 0014, not a foreign key).
    expect(await partitionOf('event_search', 'event_id', event.id)).toBe('event_search_default');
    expect(await keyOf('moved-then-deleted')).toEqual({ event_id: event.id, at: '2199-01-01' });

    // Its forward delivery (the store queues one for rule-a) moved with it.
    expect(await partitionOf('deliveries', 'event_id', event.id)).toBe('deliveries_default');

    await db.pool.query(sql.unsafe`DELETE FROM events WHERE id = ${event.id}`);
    expect(await keyOf('moved-then-deleted')).toBeNull();
    expect(await partitionOf('event_search', 'event_id', event.id)).toBeNull();
    expect(await partitionOf('event_search', 'event_id', other.id)).not.toBeNull();
    expect(await partitionOf('deliveries', 'event_id', event.id)).toBeNull();
    expect(await partitionOf('deliveries', 'event_id', other.id)).not.toBeNull();
    expect(await keyOf('left-alone')).toEqual({ event_id: other.id, at: utcDay(0) });
    const again = await store.insert(newEvent({ provider: 'github', externalId: 'moved-then-deleted' }));
    expect(again.duplicate).toBe(false);
    expect(again.event.id).not.toBe(event.id);
  });

  it('retention drops whole partitions past max_age, deletes the rest by row, and a retry of a dropped event is new', async () => {
    for (const day of [-12, -11, -10]) await ensurePartitions(db.pool, 'day', `${utcDay(day)}T12:00:00Z`);
    const replays = createReplayAttemptRepository(db.pool);
    const placed: Record<string, string> = {};
    for (const [label, at] of [
      ['twelveDaysAgo', `${utcDay(-12)}T06:00:00Z`],
      ['elevenDaysAgo', `${utcDay(-11)}T06:00:00Z`],
      ['tenDaysAgo', `${utcDay(-10)}T23:59:00Z`],
    ] as const) {
      const { event } = await store.insert(newEvent({ externalId: `old-${label}` }));
      await moveTo(event.id, at);
      await replays.record({
        eventId: event.id,
        caller: 'test',
        targetUrl: 'http://127.0.0.1:9/',
        resolvedIp: '127.0.0.1',
        delivered: false,
        responseStatus: null,
        responseMs: null,
        responseExcerpt: null,
        responseContentType: null,
        errorCode: 'replay_failed',
        unsigned: false,
      });
      placed[label] = event.id;
    }
    while ((await indexQueuedEvents(db.pool, 100)) > 0);
    const twelveDaysAgo = placed.twelveDaysAgo ?? '';
    expect(await partitionOf('event_search', 'event_id', twelveDaysAgo)).toBe(
      `event_search_p${utcDay(-12).replaceAll('-', '')}`,
    );
    const recent = (await store.insert(newEvent())).event;

    // max_age ten days (partitions before this week's, which the test above made as one range):
    // the partitions of twelve and eleven days ago are wholly past it, that of ten days ago only
    // partly, so it stays (its event at 23:59 is younger than the cutoff, unless the
    // test runs in the last minute of a UTC day, when it goes by row); the 1999 event in DEFAULT
    // goes by row.
    const retention = startRetention({
      pool: db.pool,
      config: { max_age: '10d', interval_seconds: 3_600 },
      logger: silentLogger,
      initialDelayMs: 3_600_000,
    });
    const result = await retention.runOnce();
    await retention.stop();
    expect(result.droppedPartitions).toBe(2);
    expect(result.deletedByAge).toBeGreaterThanOrEqual(1);
    const left = (await ranges()).map((range) => range.lower);
    expect(left).not.toContain(utcDay(-12));
    expect(left).not.toContain(utcDay(-11));
    expect(left).toContain(utcDay(-10));
    for (const table of PARTITIONED_TABLES) {
      expect(
        await db.pool.exists(
          sql.unsafe`SELECT 1 FROM pg_class WHERE relname = ${`${table}_p${utcDay(-12).replaceAll('-', '')}`}`,
        ),
      ).toBe(false);
    }
    expect(await store.get(twelveDaysAgo)).toBeNull();
    expect(await store.get(recent.id)).not.toBeNull();
    expect(
      await db.pool.exists(sql.unsafe`SELECT 1 FROM event_external_ids WHERE external_id LIKE 'old-twelve%'`),
    ).toBe(false);
    expect(await db.pool.exists(sql.unsafe`SELECT 1 FROM events WHERE received_at < '2000-01-01'`)).toBe(false);
    // Deleted by row, the 1999 event took its key with it (a trigger, not a foreign key: migration 0012).
    expect(await db.pool.exists(sql.unsafe`SELECT 1 FROM event_external_ids WHERE external_id = 'far-past'`)).toBe(
      false,
    );

    // The provider retries the dropped event: it is stored again, as a new event.
    const again = await store.insert(newEvent({ externalId: 'old-twelveDaysAgo' }));
    expect(again.duplicate).toBe(false);
  });

  it("a retry days later is recognised: the key is found in its event's old partition", async () => {
    await ensurePartitions(db.pool, 'day', `${utcDay(-5)}T12:00:00Z`);
    const { event } = await store.insert(newEvent({ provider: 'github', externalId: 'five-days-old' }));
    await moveTo(event.id, `${utcDay(-5)}T12:00:00Z`);
    expect(await partitionOf('event_external_ids', 'event_id', event.id)).toBe(
      `event_external_ids_p${utcDay(-5).replaceAll('-', '')}`,
    );
    const retry = await store.insert(newEvent({ provider: 'github', externalId: 'five-days-old' }));
    expect(retry).toMatchObject({ duplicate: true, event: { id: event.id } });
  });

  it("a retry's lookup reads the key partitions of the dedupe window, not the older ones", async () => {
    // Migration 0021: keys stamped from 7 days before the delivery to an hour after; the other
    // partitions are pruned as the lookup's plan starts. Counted by each partition's scans (an
    // index or a sequential scan, as the planner chooses for a small partition).
    for (let day = -20; day <= 0; day += 1) await ensurePartitions(db.pool, 'day', `${utcDay(day)}T12:00:00Z`);
    const one = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      const scans = async (): Promise<Map<string, number>> => {
        // The inserting backend sends its counts once idle; the reader then sees them.
        await one.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
        await new Promise((resolve) => setTimeout(resolve, 300));
        const rows = await db.pool.any(sql.type(z.object({ name: z.string(), scans: z.number() }))`
          SELECT relname AS name, (seq_scan + coalesce(idx_scan, 0))::int AS scans FROM pg_stat_user_tables
          WHERE relname LIKE 'event_external_ids_p%'
        `);
        return new Map(rows.map((row) => [row.name, row.scans]));
      };
      const oneStore = createEventStore(one);
      const warm = await oneStore.insert(newEvent({ provider: 'github', externalId: 'window-warm' }));
      expect(warm.duplicate).toBe(false);
      let before = await scans();
      // As below: the warm-up's counts must be in before, not counted as the lookup's.
      for (let tries = 0; tries < 5; tries += 1) before = await scans();
      await oneStore.insertMany([
        newEvent({ provider: 'github', externalId: 'window-a' }),
        newEvent({ provider: 'github', externalId: 'window-b' }),
      ]);
      const today = `event_external_ids_p${utcDay(0).replaceAll('-', '')}`;
      // The backend's counts reach the shared statistics all at once, when it next goes idle: wait
      // until today's partition shows the lookup (a loaded machine can take more than one round).
      let after = await scans();
      for (let tries = 0; tries < 30 && (after.get(today) ?? 0) === (before.get(today) ?? 0); tries += 1) {
        after = await scans();
      }
      const read = (day: number): number => {
        const name = `event_external_ids_p${utcDay(day).replaceAll('-', '')}`;
        return (after.get(name) ?? 0) - (before.get(name) ?? 0);
      };
      // Today's and the last week's partitions are read; none older than 8 days is.
      expect(read(0)).toBeGreaterThan(0);
      expect(read(-6)).toBeGreaterThan(0);
      for (let day = -20; day <= -9; day += 1) expect(read(day), `day ${day}`).toBe(0);
    } finally {
      await one.end();
    }
  });

  it('a batch learns of its retries within the dedupe window in one lookup, and stores only what is new', async () => {
    await ensurePartitions(db.pool, 'day', `${utcDay(-5)}T12:00:00Z`);
    const { event: old } = await store.insert(newEvent({ provider: 'github', externalId: 'batch-old' }));
    await moveTo(old.id, `${utcDay(-5)}T12:00:00Z`);
    const { event: far } = await store.insert(newEvent({ provider: 'github', externalId: 'batch-far' }));
    await moveTo(far.id, '1999-06-01T00:00:00Z');
    const { event: today } = await store.insert(newEvent({ provider: 'github', externalId: 'batch-today' }));
    const results = await store.insertMany([
      newEvent({ provider: 'github', externalId: 'batch-new' }),
      newEvent({ provider: 'github', externalId: 'batch-old' }),
      newEvent({ provider: 'github', externalId: null }),
      // The same id from another provider is another delivery.
      newEvent({ provider: 'gitlab', externalId: 'batch-today' }),
      newEvent({ provider: 'github', externalId: 'batch-far' }),
      newEvent({ provider: 'github', externalId: 'batch-today' }),
      newEvent({ provider: 'github', externalId: 'batch-new' }),
    ]);
    // batch-far's first delivery is decades older than the dedupe window (7 days, migration
    // 0021): its retry is looked for no further back, and is stored as a new event.
    expect(results.map((result) => result.duplicate)).toEqual([false, true, false, false, false, true, true]);
    expect(results.map((result) => result.event.id)).toEqual([
      results[0]?.event.id,
      old.id,
      results[2]?.event.id,
      results[3]?.event.id,
      results[4]?.event.id,
      today.id,
      results[0]?.event.id,
    ]);
    expect(results[4]?.event.id).not.toBe(far.id);
    expect(await partitionOf('event_external_ids', 'event_id', far.id)).toBe('event_external_ids_default');
    expect(
      await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM events WHERE external_id IN ('batch-new', 'batch-old', 'batch-far', 'batch-today')
      `),
    ).toBe(6);
  });

  it('a first delivery racing one in flight in the same partition waits for it, then is its duplicate', async () => {
    const other = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let first: () => void = () => {};
      const written = new Promise<void>((resolve) => {
        first = resolve;
      });
      let firstId = '';
      const before = other.transaction(async (tx) => {
        firstId = await tx.oneFirst(sql.type(z.object({ id: z.string() }))`${insertKeyAt(null, 'same-partition')}`);
        first();
        await held;
      });
      await written;
      // The lookup cannot see the uncommitted key; the partition's unique index makes the insert
      // wait, then refuses it under that partition's own index name, and the store finds the first.
      const racing = store.insert(newEvent({ provider: 'github', externalId: 'same-partition' }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      await before;
      expect(await racing).toMatchObject({ duplicate: true, event: { id: firstId } });
    } finally {
      await other.end();
    }
    // The refusal's name, at midday, away from any bound.
    const noon = new Date(`${utcDay(0)}T12:00:00Z`).getTime();
    await db.pool.query(insertKeyAt(noon, 'named-refusal', false));
    await expect(db.pool.query(insertKeyAt(noon, 'named-refusal', false))).rejects.toMatchObject({
      constraint: `event_external_ids_p${utcDay(0).replaceAll('-', '')}_key`,
    });
  });

  it('two first deliveries of one key in flight at once, either side of a partition bound: the later one is left out', async () => {
    // Made with the keys partitions of 0013: a bound between two dated partitions, tomorrow 00:00 UTC.
    const bound = new Date(`${utcDay(1)}T00:00:00Z`).getTime();
    const other = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      const before = await openTransaction((tx) => tx.query(insertKeyAt(bound - 1_000, 'on-the-bound')));
      const after = other.query(insertKeyAt(bound + 1_000, 'on-the-bound'));
      // The second's lookup waits for the first to commit: its key is in the next partition, whose
      // own index knows nothing of the first one's. Then it sees the first's key, and writes nothing.
      expect(await stillWaiting(after)).toBe(true);
      await before.release();
      expect((await after).rowCount).toBe(0);
      const keys = await db.pool.anyFirst(sql.type(z.object({ name: z.string() }))`
        SELECT tableoid::regclass::text AS name FROM event_external_ids WHERE external_id = 'on-the-bound'
      `);
      expect(keys).toEqual([`event_external_ids_p${utcDay(0).replaceAll('-', '')}`]);
    } finally {
      await other.end();
    }
  });

  it('only a key within five minutes of a partition bound waits for the bound lock', async () => {
    // Migration 0016: the window was an hour either side, which serialised ingest for two hours a day.
    const bound = new Date(`${utcDay(1)}T00:00:00Z`).getTime();
    const other = await createDatabasePool(db.url, { maximumPoolSize: 2 });
    try {
      const holder = await openTransaction((tx) =>
        tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtext('switchboard-external-id-bound'))`),
      );
      // Ten minutes before the bound: outside the window, written while the lock is held.
      await other.query(insertKeyAt(bound - 10 * 60_000, 'ten-minutes-before'));
      const near = other.query(insertKeyAt(bound - 4 * 60_000, 'four-minutes-before'));
      expect(await stillWaiting(near)).toBe(true);
      await holder.release();
      await near;
      expect(
        await db.pool.anyFirst(sql.type(z.object({ external_id: z.string() }))`
          SELECT external_id FROM event_external_ids WHERE external_id LIKE '%-before' ORDER BY external_id
        `),
      ).toEqual(['four-minutes-before', 'ten-minutes-before']);
    } finally {
      await other.end();
    }
  });

  it('an id lookup reads the partition its UUIDv7 time points at, not every partition', async () => {
    const { event } = await store.insert(newEvent());
    const plan = await explain(sql.unsafe`
      SELECT id FROM events WHERE id = ${event.id}
        AND received_at >= switchboard_uuid_v7_time(${event.id}::uuid) - interval '1 hour'
        AND received_at < switchboard_uuid_v7_time(${event.id}::uuid) + interval '1 hour'
    `);
    const scanned = [...plan.matchAll(/on (events_\w+)/g)].map((match) => match[1]);
    expect(scanned.length).toBeGreaterThanOrEqual(1);
    expect(scanned.length).toBeLessThanOrEqual(2);
    expect(
      await db.pool.oneFirst(sql.type(z.object({ t: z.string() }))`
      SELECT to_char(switchboard_uuid_v7_time(${event.id}::uuid) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS t
    `),
    ).toBe(event.received_at.slice(0, 10));
    // Another version carries no time: the function says so rather than guessing.
    expect(
      await db.pool.oneFirst(sql.type(z.object({ t: z.string().nullable() }))`
      SELECT switchboard_uuid_v7_time(gen_random_uuid())::text AS t
    `),
    ).toBeNull();
  });
});

async function explain(query: QuerySqlToken): Promise<string> {
  const lines = await db.pool.anyFirst(sql.type(z.object({ 'QUERY PLAN': z.string() }))`EXPLAIN (COSTS OFF) ${query}`);
  return lines.join('\n');
}
