/**
 * Migration 0011 and its batched move: a database populated under the unpartitioned schema
 * (0010) is upgraded in place, and every event, search row, queued event, replay attempt,
 * delivery and delivery attempt is still there, in the partition of its event, and still found.
 * An upgrade interrupted part-way resumes at the next start.
 */
import { pino } from 'pino';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { loadMigrations, migrate } from '../../src/store/database/migrate.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { createEmptyDatabase, silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import {
  addDeliveries,
  migrationsThrough,
  UNPARTITIONED_VERSION,
  UUID_V7_OF_G_AT_T,
} from '../support/unpartitioned-schema.ts';

const EVENTS = 400;
/** Events 1..INDEXED have search rows before the upgrade; the rest wait in the queue. */
const INDEXED = 340;

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A database migrated through 0010 (the last unpartitioned schema). */
async function databaseAt0010(): Promise<DatabasePool> {
  const migrations = await migrationsThrough(UNPARTITIONED_VERSION);
  cleanups.push(() => migrations.remove());
  const database = await createEmptyDatabase();
  const pool = await createDatabasePool(database.url, { maximumPoolSize: 3 });
  cleanups.push(() => pool.end().then(() => database.drop()));
  expect((await migrate(pool, silentLogger, { directory: migrations.directory })).current).toBe(10);
  return pool;
}

/**
 * EVENTS events over the last three days (UUIDv7 ids from their time), one from 2019 and one a
 * month ahead (both outside any partition the upgrade makes), with search rows, replay attempts,
 * deliveries and attempts, written as 0010's schema has them.
 */
async function populate(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, external_id, content_type,
      headers, payload, received_at, summary)
    SELECT ${UUID_V7_OF_G_AT_T}, 'provider-' || (g % 3), 'push', 'open', false, 'no verification: open provider',
      CASE WHEN g % 2 = 0 THEN 'delivery-' || g END, 'application/json', '{"x-n": "1"}'::jsonb,
      convert_to(format('{"n":%s,"word":"marker%s","note":"legacy"}', g, g % 7), 'UTF8'),
      t, 'event ' || g
    FROM generate_series(1, ${EVENTS}) AS g,
      LATERAL (SELECT CASE g
        WHEN 1 THEN timestamptz '2019-03-01T00:00:00Z'
        WHEN ${EVENTS} THEN now() + interval '30 days'
        ELSE now() - interval '3 days' + g * interval '10 minutes' END) AS at(t)
  `);
  await pool.query(sql.unsafe`
    INSERT INTO event_search (event_id, payload_json, payload_tsv)
    SELECT id, switchboard_payload_jsonb(payload), switchboard_payload_tsvector(payload)
    FROM events WHERE (convert_from(payload, 'UTF8')::jsonb ->> 'n')::int <= ${INDEXED}
  `);
  await pool.query(sql.unsafe`DELETE FROM event_search_queue WHERE event_id IN (SELECT event_id FROM event_search)`);
  await pool.query(sql.unsafe`
    INSERT INTO replay_attempts (id, event_id, caller, target_url, delivered, response_status, error_reason, error_code)
    SELECT gen_random_uuid(), id, 'tester', 'http://127.0.0.1:9/', false, 502, 'no_answer', 'replay_failed'
    FROM events WHERE (convert_from(payload, 'UTF8')::jsonb ->> 'n')::int % 10 = 0
  `);
  await addDeliveries(pool);
}

const tableText = z.object({ rows: z.string().nullable() });

/** Each table's rows as text, in a stable order, with the columns the old schema had. */
async function snapshot(pool: DatabasePool, suffix: '' | '_unpartitioned'): Promise<Record<string, string | null>> {
  const table = (name: string) => sql.identifier([`${name}${suffix}`]);
  const read = async (query: ReturnType<typeof sql.fragment>) =>
    (
      await pool.one(
        sql.type(tableText)`SELECT string_agg(r::text, E'\n' ORDER BY r::text) AS rows FROM (${query}) AS r`,
      )
    ).rows;
  return {
    events: await read(sql.fragment`
      SELECT id, provider, event_type, event_family, trust_mode, verified, verify_detail, external_id, content_type,
        source_ip, headers, payload, payload_size, received_at, passed_check, received_size, summary, request_method,
        request_path, request_query, response_status
      FROM ${table('events')}`),
    search: await read(sql.fragment`SELECT event_id, payload_json, payload_tsv FROM ${table('event_search')}`),
    replays: await read(sql.fragment`
      SELECT id, event_id, caller, target_url, resolved_ip, started_at, delivered, response_status, response_ms,
        error_code, unsigned, response_excerpt, response_content_type, error_reason
      FROM ${table('replay_attempts')}`),
    deliveries: await read(sql.fragment`
      SELECT id, event_id, rule, seq, state, attempt_count, budget_start, next_attempt_at, claim, created_at,
        delivered_at, cancel_reason
      FROM ${table('deliveries')}`),
    attempts: await read(sql.fragment`
      SELECT delivery_id, attempt, rule, started_at, response_status, response_ms, error, response_excerpt,
        response_content_type
      FROM ${table('delivery_attempts')}`),
    queue: await read(sql.fragment`SELECT event_id FROM event_search_queue`),
  };
}

/** The event a dependant's row belongs to, as SQL over its alias d. */
const eventIdOf = (dependant: string) =>
  dependant === 'delivery_attempts'
    ? sql.fragment`(SELECT event_id FROM deliveries WHERE deliveries.id = d.delivery_id)`
    : sql.fragment`d.event_id`;

const count = async (pool: DatabasePool, table: string): Promise<number> =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([table])}`);

describe('upgrading an unpartitioned database (0010) to time partitions', () => {
  it('moves every row, in batches, into the partition of its event, and search, replay and dedupe still work', async () => {
    const pool = await databaseAt0010();
    await populate(pool);
    const before = await snapshot(pool, '');
    expect(before.events?.split('\n')).toHaveLength(EVENTS);
    const maxSeq = await pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`SELECT max(seq)::int AS n FROM deliveries`,
    );

    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const result = await migrate(pool, logger, { upgradeBatchEvents: 128 });
    expect(result.applied).toEqual((await loadMigrations()).filter((m) => m.version > 10).map((m) => m.version));

    // Every row as it was; the old tables are gone.
    expect(await snapshot(pool, '')).toEqual(before);
    expect(await pool.exists(sql.unsafe`SELECT 1 FROM pg_class WHERE relname LIKE '%_unpartitioned'`)).toBe(false);
    const progress = lines.map((line) =>
      z.object({ msg: z.string(), moved: z.number().optional() }).parse(JSON.parse(line)),
    );
    const moves = progress
      .filter((line) => line.msg === 'moving events into time partitions')
      .map((line) => line.moved);
    expect(moves).toEqual([undefined, 128, 256, 384, EVENTS]);

    // Each row sits in its event's partition: recent days in dated ones, 2019 and next month in DEFAULT.
    const placement = await pool.any(sql.type(z.object({ partition: z.string(), n: z.number() }))`
      SELECT tableoid::regclass::text AS partition, count(*)::int AS n FROM events GROUP BY 1 ORDER BY 1
    `);
    expect(placement.find((row) => row.partition === 'events_default')?.n).toBe(2);
    expect(placement.filter((row) => /^events_p\d{8}$/.test(row.partition)).reduce((sum, row) => sum + row.n, 0)).toBe(
      EVENTS - 2,
    );
    for (const dependant of ['event_search', 'replay_attempts', 'deliveries', 'delivery_attempts']) {
      const misplaced = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM ${sql.identifier([dependant])} AS d
        WHERE replace(d.tableoid::regclass::text, ${dependant}, '') <> replace(
          (SELECT e.tableoid::regclass::text FROM events e
           WHERE e.received_at = d.event_received_at
             AND e.id = ${eventIdOf(dependant)}),
          'events', '')
      `);
      expect(misplaced, dependant).toBe(0);
    }

    // Search finds indexed and still-queued events alike, before and after the indexer runs.
    const store = createEventStore(pool);
    const expected = (k: number) => Array.from({ length: EVENTS }, (_, i) => i + 1).filter((n) => n % 7 === k).length;
    for (const k of [0, 3]) {
      const found = await store.listWithSummaries({ q: `marker${k}`, limit: 100 });
      expect(found.events).toHaveLength(expected(k));
    }
    while ((await indexQueuedEvents(pool, 100)) > 0);
    expect(await count(pool, 'event_search')).toBe(EVENTS);
    expect((await store.listWithSummaries({ q: 'marker5', limit: 100 })).events).toHaveLength(expected(5));

    // A moved event is found by id, its replay history with it; a provider's retry of it is a duplicate.
    const [some] = (await store.list({ provider: 'provider-1', limit: 1 })).events;
    if (!some) throw new Error('no event');
    const stored = await store.get(some.id);
    expect(stored?.summary).toMatch(/^event \d+$/);
    const n = Number(stored?.summary?.slice('event '.length));
    const history = await createReplayAttemptRepository(pool).listForEvent(some.id);
    expect(history).toHaveLength(n % 10 === 0 ? 1 : 0);
    const retried = await store.insert(newEvent({ provider: 'provider-2', externalId: 'delivery-2' }));
    expect(retried.duplicate).toBe(true);
    const original = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM events WHERE external_id = 'delivery-2'
    `);
    expect(retried.event.id).toBe(original);

    // New deliveries carry on the old received order.
    const forwarded = createEventStore(pool, { forwardRulesFor: () => ['a'] });
    const { event } = await forwarded.insert(newEvent());
    const seq = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT seq::int AS n FROM deliveries WHERE event_id = ${event.id}
    `);
    expect(seq).toBeGreaterThan(maxSeq);
  }, 120_000);

  it('resumes an upgrade that was interrupted part-way, and loses nothing', async () => {
    const pool = await databaseAt0010();
    await populate(pool);
    const before = await snapshot(pool, '');

    // Batches of 50; the report of the second batch fails (after that batch committed).
    const interrupting = pino(
      {
        level: 'info',
        hooks: {
          logMethod(args, method) {
            const [fields] = args;
            if (typeof fields === 'object' && fields !== null && 'moved' in fields && fields.moved === 100) {
              throw new Error('interrupted');
            }
            method.apply(this, args);
          },
        },
      },
      { write: () => undefined },
    );
    await expect(migrate(pool, interrupting, { upgradeBatchEvents: 50 })).rejects.toThrow('interrupted');
    expect(await count(pool, 'events')).toBe(100);
    expect(await count(pool, 'events_unpartitioned')).toBe(EVENTS - 100);

    // The next start finds 0011 applied and moves the rest.
    expect((await migrate(pool, silentLogger, { upgradeBatchEvents: 50 })).applied).toEqual([]);
    expect(await snapshot(pool, '')).toEqual(before);
    expect(await pool.exists(sql.unsafe`SELECT 1 FROM pg_class WHERE relname LIKE '%_unpartitioned'`)).toBe(false);
  }, 120_000);
});
