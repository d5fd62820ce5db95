/**
 * The deferred search index (migration 0004, src/store/events/search-indexer.ts, the search part of
 * src/store/events/list-statement.ts) on a real PostgreSQL: every insert path enqueues, search is complete
 * before and after indexing, deletions, concurrent indexers, the background loop (including an
 * outage) and the upgrade of a database that still has the generated search columns.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import type { ListQuery, NewEvent } from '../../src/store/events/event-store.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { buildListSql, resolveListQuery } from '../../src/store/events/list-statement.ts';
import { DEFAULT_MIGRATIONS_DIRECTORY, migrate } from '../../src/store/database/migrate.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { startRetention } from '../../src/store/partitions/retention.ts';
import {
  ageOfUuidv7,
  indexQueuedEvents,
  restAfter,
  startSearchIndexer,
  type SearchIndexer,
} from '../../src/store/events/search-indexer.ts';
import { createEmptyDatabase, freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { seedEvents } from '../support/seed.ts';
import { startControlledProxy } from '../support/tcp-proxy.ts';

let db: TestDatabase;
let store: PgEventStore;
const indexers: SearchIndexer[] = [];

beforeAll(async () => {
  db = await freshDatabase({ maximumPoolSize: 8 });
  store = createEventStore(db.pool);
});
afterAll(async () => {
  await Promise.all(indexers.map((indexer) => indexer.stop()));
  await db.close();
});
beforeEach(async () => {
  await Promise.all(indexers.splice(0).map((indexer) => indexer.stop()));
  await db.pool.query(sql.unsafe`TRUNCATE events, event_search, event_search_queue CASCADE`);
});

const idColumn = z.object({ id: z.string() });
const countColumn = z.object({ count: z.number().int() });
const searchRow = z.object({ event_id: z.string(), json: z.string().nullable(), tsv: z.string().nullable() });

const sorted = (ids: readonly string[]): string[] => [...ids].sort();

async function queuedIds(pool: DatabasePool = db.pool): Promise<string[]> {
  return [
    ...(await pool.anyFirst(sql.type(idColumn)`SELECT event_id AS id FROM event_search_queue ORDER BY event_id`)),
  ];
}

async function indexedIds(pool: DatabasePool = db.pool): Promise<string[]> {
  return [...(await pool.anyFirst(sql.type(idColumn)`SELECT event_id AS id FROM event_search ORDER BY event_id`))];
}

async function eventIds(pool: DatabasePool = db.pool): Promise<string[]> {
  return [...(await pool.anyFirst(sql.type(idColumn)`SELECT id FROM events ORDER BY id`))];
}

async function count(table: 'events' | 'event_search' | 'event_search_queue'): Promise<number> {
  return db.pool.oneFirst(sql.type(countColumn)`SELECT count(*)::int AS count FROM ${sql.identifier([table])}`);
}

async function searchRows(
  pool: DatabasePool = db.pool,
): Promise<Map<string, { json: string | null; tsv: string | null }>> {
  const rows = await pool.any(
    sql.type(searchRow)`SELECT event_id, payload_json::text AS json, payload_tsv::text AS tsv FROM event_search`,
  );
  return new Map(rows.map((row) => [row.event_id, { json: row.json, tsv: row.tsv }]));
}

async function drainQueue(pool: DatabasePool = db.pool, limit = 1_000): Promise<number> {
  let total = 0;
  for (let taken = -1; taken !== 0; total += taken) taken = await indexQueuedEvents(pool, limit);
  return total;
}

/** Every id of a search in order, following cursors to the end (callers compare it with the full expected list). */
async function allPages(
  query: ListQuery,
  activeStore: PgEventStore = store,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await activeStore.list({ ...query, ...(cursor === undefined ? {} : { cursor }) });
    pages += 1;
    ids.push(...page.events.map((event) => event.id));
    if (page.next_cursor === undefined) break;
    expect(page.next_cursor).not.toBe(cursor);
    cursor = page.next_cursor;
    if (pages > 1_000) throw new Error('pagination does not end');
  }
  return { ids, pages };
}

const searchIds = async (query: ListQuery, activeStore: PgEventStore = store): Promise<string[]> =>
  (await allPages({ limit: 200, ...query }, activeStore)).ids;

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(15);
  }
  return performance.now() - started;
}

function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
  });
  return { logger, lines };
}

type TimedBatch = { start: number; end: number; failed: boolean };

/** How long `batches` ran in all, in ms. */
const busyMs = (batches: readonly TimedBatch[]): number =>
  batches.reduce((sum, batch) => sum + (batch.end - batch.start), 0);

/** The share of the time from the first of `batches` starting to the last one ending that a batch ran. */
function shareBusy(batches: readonly TimedBatch[]): number {
  const first = batches[0];
  const last = batches.at(-1);
  if (!first || !last) throw new Error('fewer than two batches');
  return busyMs(batches) / (last.end - first.start);
}

/** The pool, recording every indexing statement (pool.one) the indexer runs: when, and whether it failed. */
function timedPool(pool: DatabasePool): { pool: DatabasePool; batches: TimedBatch[] } {
  const batches: TimedBatch[] = [];
  const wrapped = new Proxy(pool, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      if (property !== 'one' || typeof value !== 'function') return value;
      return async (...args: unknown[]): Promise<unknown> => {
        const start = performance.now();
        let failed = true;
        try {
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(object, args);
          failed = false;
          return result;
        } finally {
          batches.push({ start, end: performance.now(), failed });
        }
      };
    },
  });
  return { pool: wrapped, batches };
}

const WARN = 40;
const INFO = 30;

const JSON_PAYLOAD = '{"action":"opened","marker":"zebra","repository":{"full_name":"octo/widget"}}';
const FORM_PAYLOAD = 'token=abc&team_domain=acme';
const BINARY_PAYLOAD = Buffer.from([0xff, 0x00, 0x41]);
// The six characters \u0000 inside a JSON string: valid JSON and UTF-8, but jsonb refuses NUL.
const NUL_ESCAPE_PAYLOAD = '{"a":"\\u0000"}';

describe('enqueueing', () => {
  it('queues exactly the rows each insert path really stores, once each', async () => {
    const single = await store.insert(newEvent());
    expect(single.duplicate).toBe(false);
    expect(await queuedIds()).toEqual([single.event.id]);

    // In-batch retry of delivery-1: written once; the same external id at another provider is distinct.
    const batch = await store.insertMany([
      newEvent({ externalId: 'delivery-1' }),
      newEvent({ externalId: null }),
      newEvent({ externalId: 'delivery-1' }),
      newEvent({ provider: 'stripe', externalId: 'delivery-1' }),
    ]);
    expect(batch.map((result) => result.duplicate)).toEqual([false, false, true, false]);
    const [b0, b1, b2, b3] = batch.map((result) => result.event.id);
    expect(b2).toBe(b0);
    expect(new Set([b0, b1, b3]).size).toBe(3);

    // A provider retrying an already stored delivery, next to a new one.
    const retried = await store.insertMany([
      newEvent({ externalId: 'delivery-1' }),
      newEvent({ externalId: 'delivery-2' }),
    ]);
    expect(retried.map((result) => result.duplicate)).toEqual([true, false]);
    expect(retried[0]?.event.id).toBe(b0);
    // A statement that inserts no row at all (every row a duplicate) must not fail or enqueue.
    const onlyDuplicate = await store.insert(newEvent({ externalId: 'delivery-2' }));
    expect(onlyDuplicate).toMatchObject({ duplicate: true, event: { id: retried[1]?.event.id } });

    const stored = [single.event.id, b0, b1, b3, retried[1]?.event.id];
    expect(await queuedIds()).toEqual(sorted(stored.map(String)));
    expect(await eventIds()).toEqual(await queuedIds());

    // The bulk seed (one statement of 25 rows) queues its events as the store does.
    await seedEvents(db.pool, { count: 25, providers: 3 });
    expect(await count('events')).toBe(30);
    expect(await queuedIds()).toEqual(await eventIds());

    // Once indexed, a retried delivery does not put its event back in the queue.
    expect(await drainQueue()).toBe(30);
    expect((await store.insert(newEvent({ externalId: 'delivery-1' }))).duplicate).toBe(true);
    expect(await count('event_search_queue')).toBe(0);
    expect(await indexedIds()).toEqual(await eventIds());
  });
});

describe('search before and after indexing', () => {
  it('finds queued events on the fly, and the same ones from event_search once indexed', async () => {
    const inserted = await store.insertMany(
      [JSON_PAYLOAD, FORM_PAYLOAD, BINARY_PAYLOAD, NUL_ESCAPE_PAYLOAD, '{"marker":"okapi","n":2}'].map((payload) =>
        newEvent({ payload: typeof payload === 'string' ? Buffer.from(payload) : payload }),
      ),
    );
    const [jsonId, formId, binaryId, nulId, otherJsonId] = inserted.map((result) => result.event.id);
    const all = inserted.map((result) => result.event.id);
    expect(await queuedIds()).toEqual(sorted(all));
    expect(await count('event_search')).toBe(0);

    const queries: Array<[ListQuery, Array<string | undefined>]> = [
      [{ q: 'zebra' }, [jsonId]],
      [{ q: 'octo/widget' }, [jsonId]],
      [{ q: 'acme' }, [formId]],
      [{ q: 'team_domain' }, [formId]],
      [{ q: 'u0000' }, [nulId]],
      [{ q: 'marker -zebra' }, [otherJsonId]],
      [{ q: 'nothing-has-this' }, []],
      [{ match: { marker: 'zebra' } }, [jsonId]],
      [{ match: { repository: { full_name: 'octo/widget' } } }, [jsonId]],
      // {} is contained in every JSON object, and in nothing that is not JSON.
      [{ match: {} }, [otherJsonId, jsonId]],
      [{ q: 'marker', match: { n: 2 } }, [otherJsonId]],
    ];
    const expectSearches = async (): Promise<void> => {
      for (const [query, expected] of queries) {
        expect(sorted(await searchIds(query)), JSON.stringify(query)).toEqual(sorted(expected.map(String)));
      }
      // Newest first across kinds of payload.
      expect(await searchIds({ match: {} })).toEqual([otherJsonId, jsonId]);
    };

    await expectSearches();
    expect(await indexQueuedEvents(db.pool, 100)).toBe(5);
    expect(await indexQueuedEvents(db.pool, 100)).toBe(0);
    expect(await count('event_search_queue')).toBe(0);
    await expectSearches();

    const rows = await searchRows();
    expect([...rows.keys()].sort()).toEqual(sorted(all));
    const row = (id: string | undefined) => rows.get(String(id));
    expect(JSON.parse(row(jsonId)?.json ?? 'null')).toEqual(JSON.parse(JSON_PAYLOAD));
    expect(row(jsonId)?.tsv).toBe(
      "'action':1 'full':6 'marker':3 'name':7 'octo/widget':8 'opened':2 'repository':5 'zebra':4",
    );
    expect(row(formId)).toEqual({ json: null, tsv: "'abc':2 'acme':5 'domain':4 'team':3 'token':1" });
    expect(row(binaryId)).toEqual({ json: null, tsv: null });
    expect(row(nulId)).toEqual({ json: null, tsv: "'a':1 'u0000':2" });
    expect(JSON.parse(row(otherJsonId)?.json ?? 'null')).toEqual({ marker: 'okapi', n: 2 });
    // The indexer computes exactly what the on-the-fly match computes.
    expect(
      await db.pool.oneFirst(sql.type(countColumn)`
        SELECT count(*)::int AS count FROM event_search JOIN events ON events.id = event_search.event_id
        WHERE payload_json IS DISTINCT FROM switchboard_payload_jsonb(events.payload)
          OR payload_tsv IS DISTINCT FROM switchboard_payload_tsvector(events.payload)
      `),
    ).toBe(0);
  });

  it('pages a search over indexed and queued events newest first, without duplicates or gaps', async () => {
    const batch = (tag: string, n: number): NewEvent[] =>
      Array.from({ length: n }, (_, i) => newEvent({ payload: Buffer.from(JSON.stringify({ tag, i })) }));
    const first = (await store.insertMany([...batch('needle', 10), ...batch('hay', 5)])).map((r) => r.event.id);
    expect(await drainQueue()).toBe(15);
    const second = (await store.insertMany([...batch('needle', 10), ...batch('hay', 5)])).map((r) => r.event.id);
    expect(await indexedIds()).toEqual(sorted(first));
    expect(await queuedIds()).toEqual(sorted(second));

    // Interleave indexed and queued events in time, two per timestamp, so ties fall across both kinds.
    const interleaved = first.flatMap((id, i) => [id, second[i] ?? '']);
    await db.pool.query(sql.unsafe`
      UPDATE events SET received_at = timestamptz '2024-03-01T00:00:00Z' + make_interval(secs => input.k / 2)
      FROM ${sql.unnest(
        interleaved.map((id, k) => [id, k]),
        ['uuid', 'int4'],
      )} AS input(id, k)
      WHERE events.id = input.id
    `);
    const needles = [...first.slice(0, 10), ...second.slice(0, 10)];
    const expected = [
      ...(await db.pool.anyFirst(sql.type(idColumn)`
        SELECT id FROM events WHERE id = ANY(${sql.array(needles, 'uuid')}) ORDER BY received_at DESC, id DESC
      `)),
    ];
    expect(expected).toHaveLength(20);

    const byQ = await allPages({ q: 'needle', limit: 3 });
    expect(byQ.ids).toEqual(expected);
    expect(byQ.pages).toBe(7);
    const byMatch = await allPages({ match: { tag: 'needle' }, limit: 7 });
    expect(byMatch.ids).toEqual(expected);
    expect(byMatch.pages).toBe(3);
    // Still mixed: nothing was indexed by searching.
    expect(await count('event_search_queue')).toBe(15);
  });
});

describe('deletion', () => {
  it('drops queue entries of events deleted before indexing, and cascades indexed rows', async () => {
    const ids = (await store.insertMany(Array.from({ length: 5 }, () => newEvent()))).map((r) => r.event.id);
    const retention = startRetention({
      pool: db.pool,
      config: { max_events: 2, interval_seconds: 3_600 },
      logger: silentLogger,
      initialDelayMs: 3_600_000,
    });
    try {
      expect(await retention.runOnce()).toEqual({ deletedByAge: 0, deletedByCount: 3 });
    } finally {
      await retention.stop();
    }
    const kept = await eventIds();
    expect(kept).toEqual(sorted(ids.slice(3)));
    expect(await queuedIds()).toEqual(sorted(ids)); // three orphans

    expect(await searchIds({ match: {} })).toEqual([...ids.slice(3)].reverse());
    expect(await indexQueuedEvents(db.pool, 100)).toBe(5);
    expect(await count('event_search_queue')).toBe(0);
    expect(await indexedIds()).toEqual(kept);

    const [gone, stays] = ids.slice(3);
    await db.pool.query(sql.unsafe`DELETE FROM events WHERE id = ${String(gone)}`);
    expect(await indexedIds()).toEqual([String(stays)]);
    expect(await searchIds({ match: {} })).toEqual([stays]);
  });

  it('indexes a batch while another transaction deletes one of its events', async () => {
    const [gone, kept] = (await store.insertMany([newEvent(), newEvent()])).map((r) => r.event.id);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let deleted: () => void = () => undefined;
    const deletedOnce = new Promise<void>((resolve) => (deleted = resolve));
    // Retention's delete, still uncommitted while the indexer runs its batch.
    const deleting = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`DELETE FROM events WHERE id = ${String(gone)}`);
      deleted();
      await held;
    });
    await deletedOnce;
    const indexing = indexQueuedEvents(db.pool, 100).then(
      (taken) => ({ taken }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
    // Give the indexer time to reach the deleted row (it waits on the deleter's row lock).
    await waitFor(
      async () =>
        db.pool.exists(sql.unsafe`
          SELECT 1 FROM pg_stat_activity
          WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%WITH taken AS%'
        `),
      2_000,
      'the indexer to wait on the delete',
    ).catch(() => undefined);
    release();
    await deleting;
    expect(await indexing).toEqual({ taken: 2 });
    expect(await indexedIds()).toEqual([String(kept)]);
    expect(await count('event_search_queue')).toBe(0);
  });
});

describe('concurrent indexers', () => {
  it('skips entries another batch has locked instead of waiting for them', async () => {
    await seedEvents(db.pool, { count: 30, providers: 2 });
    const queued = await queuedIds();
    const locked = queued.slice(0, 10);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let lockedNow: () => void = () => undefined;
    const lockTaken = new Promise<void>((resolve) => (lockedNow = resolve));
    // Another indexer's batch in flight: its entries are row-locked until it commits.
    const locking = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`
        SELECT event_id FROM event_search_queue WHERE event_id = ANY(${sql.array(locked, 'uuid')}) FOR UPDATE
      `);
      lockedNow();
      await held;
    });
    await lockTaken;
    const taken = await Promise.race([indexQueuedEvents(db.pool, 10), delay(5_000).then(() => 'blocked' as const)]);
    release();
    await locking;
    expect(taken).toBe(10);
    expect(await indexedIds()).toEqual(queued.slice(10, 20));
    expect(await queuedIds()).toEqual([...locked, ...queued.slice(20)]);
  });

  it('indexes every event exactly once with several batches running at the same time', async () => {
    await seedEvents(db.pool, { count: 2_000, providers: 5 });
    expect(await count('event_search_queue')).toBe(2_000);

    // Matching 2,000 queued events on the fly is where PostgreSQL would choose a parallel plan; the
    // payload helpers trap errors in a subtransaction, which a parallel worker cannot start.
    const user7 = [
      ...(await db.pool.anyFirst(sql.type(idColumn)`
      SELECT id FROM events WHERE convert_from(payload, 'UTF8') LIKE '%"user7"%'
      ORDER BY received_at DESC, id DESC
    `)),
    ];
    expect(user7).toHaveLength(2);
    for (const query of [{ q: 'user7' }, { match: { sender: { login: 'user7' } } }]) {
      const forced = await db.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`
          SELECT set_config(name, setting, true) FROM (VALUES
            ('parallel_setup_cost', '0'), ('parallel_tuple_cost', '0'), ('min_parallel_table_scan_size', '0'),
            ('min_parallel_index_scan_size', '0'), ('max_parallel_workers_per_gather', '2'),
            ('force_parallel_mode', 'on'), ('debug_parallel_query', 'on')
          ) AS wanted(name, setting)
          WHERE name IN (SELECT name FROM pg_settings)
        `);
        return tx.any(buildListSql(resolveListQuery({ ...query, limit: 200 })));
      });
      expect(
        forced.map((row) => row.id),
        JSON.stringify(query),
      ).toEqual(user7);
      expect(await searchIds(query)).toEqual(user7);
    }

    const worker = async (): Promise<number> => {
      let total = 0;
      for (;;) {
        const taken = await indexQueuedEvents(db.pool, 25);
        expect(taken).toBeLessThanOrEqual(25);
        if (taken === 0) return total;
        total += taken;
      }
    };
    const totals = await Promise.all(Array.from({ length: 6 }, worker));
    expect(totals.reduce((a, b) => a + b, 0)).toBe(2_000);
    expect(totals.filter((total) => total > 0).length).toBeGreaterThan(1);
    expect(await count('event_search_queue')).toBe(0);
    expect(await count('event_search')).toBe(2_000);
    expect(await indexedIds()).toEqual(await eventIds());
    expect(
      await db.pool.oneFirst(
        sql.type(
          countColumn,
        )`SELECT count(*)::int AS count FROM event_search WHERE payload_json IS NULL OR payload_tsv IS NULL`,
      ),
    ).toBe(0);
  });
});

/** Ingest going on meanwhile: a new event every 10 ms until the function returned is called. */
function keepArriving(): () => Promise<void> {
  const arrivals = new AbortController();
  const arriving = (async () => {
    while (!arrivals.signal.aborted) {
      await store.insert(newEvent());
      await delay(10);
    }
  })();
  return async () => {
    arrivals.abort();
    await arriving;
  };
}

/** Small batches held to a 5 % share of the time while events arrive, within the given lag. */
function dutyCycled(pool: DatabasePool, maxLagMs: number): SearchIndexer {
  return startSearchIndexer({ pool, logger: silentLogger, batchSize: 5, busyShare: 0.05, maxLagMs });
}

/** Starts an indexer that defers to `ingestPressed` until `maxBurstLagMs` behind, and waits for it to index one event. */
async function indexFirstEventUnder(ingestPressed: () => boolean, maxBurstLagMs: number): Promise<void> {
  indexers.push(
    startSearchIndexer({ pool: db.pool, logger: silentLogger, idleIntervalMs: 20, ingestPressed, maxBurstLagMs }),
  );
  await store.insert(newEvent());
  await waitFor(async () => (await count('event_search_queue')) === 0, 3_000, 'the first event indexed');
}

describe('startSearchIndexer', () => {
  it('indexes new events in the background and stops promptly for good', async () => {
    const indexer = startSearchIndexer({ pool: db.pool, logger: silentLogger, idleIntervalMs: 20 });
    indexers.push(indexer);
    const { event } = await store.insert(newEvent({ payload: Buffer.from('{"color":"teal"}') }));
    await waitFor(async () => (await count('event_search_queue')) === 0, 3_000, 'background indexing');
    expect(await indexedIds()).toEqual([event.id]);
    expect((await searchRows()).get(event.id)?.json).toBe('{"color": "teal"}');

    const started = performance.now();
    await indexer.stop();
    expect(performance.now() - started).toBeLessThan(500);
    const late = await store.insert(newEvent());
    await delay(250); // more than ten idle intervals
    expect(await queuedIds()).toEqual([late.event.id]);
    expect(await indexedIds()).toEqual([event.id]);
  });

  it('holds a backlog to its duty cycle while events keep arriving, while drain() indexes everything at once', async () => {
    await seedEvents(db.pool, { count: 1_000, providers: 4 });
    const stopArriving = keepArriving();
    const timed = timedPool(db.pool);
    // The seeded backlog is years old: without a lag bound, only the duty cycle applies.
    const indexer = dutyCycled(timed.pool, Number.POSITIVE_INFINITY);
    indexers.push(indexer);
    // It keeps making progress, but spends about 5 % of the wall time in batches.
    try {
      await waitFor(() => timed.batches.length >= 3, 5_000, 'three batches');
      await delay(500);
    } finally {
      await stopArriving();
    }
    const batches = [...timed.batches];
    const first = batches[0];
    if (!first) throw new Error('no batch');
    const wall = performance.now() - first.start;
    expect(busyMs(batches) / wall).toBeLessThan(0.2);
    const left = await count('event_search_queue');
    expect(left).toBeLessThan((await count('events')) - 10);
    // 200 batches of 5 at a 5 % share would need each batch under 0.15 ms to finish in that time.
    expect(left).toBeGreaterThan(0);

    const started = performance.now();
    const drained = await indexer.drain();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(drained).toBeGreaterThan(0);
    expect(drained).toBeLessThanOrEqual(left);
    // drain() also waits out a batch the loop had in flight (invisible to it under SKIP LOCKED).
    expect(await count('event_search_queue')).toBe(0);
    expect(await count('event_search')).toBe(await count('events'));

    // stop() cuts a long rest short.
    const stopping = performance.now();
    await indexer.stop();
    expect(performance.now() - stopping).toBeLessThan(500);
  });

  it('does not rest while events keep arriving once it is more than maxLagMs behind', async () => {
    // Seeded events arrived in 2024 (their UUIDv7 ids say so): far more than maxLagMs behind.
    await seedEvents(db.pool, { count: 1_000, providers: 4 });
    const stopArriving = keepArriving();
    const timed = timedPool(db.pool);
    // The same share as the duty-cycle test, which there keeps batches to under a fifth of the time.
    const indexer = dutyCycled(timed.pool, 2_000);
    indexers.push(indexer);
    try {
      await waitFor(() => timed.batches.length >= 40, 10_000, 'forty batches');
    } finally {
      await stopArriving();
    }
    expect(shareBusy(timed.batches.filter((batch) => !batch.failed).slice(1, 40))).toBeGreaterThan(0.5);
  });

  it('starts no batch while ingest is pressed, until maxBurstLagMs behind, and catches up once it is not', async () => {
    let pressed = false;
    await indexFirstEventUnder(() => pressed, 60_000);

    // A burst: ingest saturated. Events stay queued (and searchable on the fly) meanwhile.
    pressed = true;
    await store.insertMany(Array.from({ length: 50 }, () => newEvent()));
    await delay(800);
    expect(await count('event_search_queue')).toBe(50);

    pressed = false;
    await waitFor(async () => (await count('event_search_queue')) === 0, 3_000, 'the burst indexed after it');
    expect(await count('event_search')).toBe(51);
  });

  it('indexes though ingest stays pressed once it is maxBurstLagMs behind', async () => {
    // The first batch runs regardless: until then the backlog's age is unknown.
    await indexFirstEventUnder(() => true, 300);
    await store.insertMany(Array.from({ length: 50 }, () => newEvent()));
    await waitFor(async () => (await count('event_search_queue')) === 0, 5_000, 'indexing past the burst lag bound');
    expect(await count('event_search')).toBe(51);
  });

  it('tells how long ago a UUIDv7 was made', () => {
    const now = Date.UTC(2026, 0, 1);
    const id = `${(now - 2_500)
      .toString(16)
      .padStart(12, '0')
      .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
    expect(ageOfUuidv7(id, now)).toBe(2_500);
    expect(ageOfUuidv7(null, now)).toBe(0);
  });

  it('rests after a full batch for its duty cycle, but never past maxLagMs while events arrive', () => {
    const policy = { batchSize: 200, busyShare: 0.25, idleIntervalMs: 500, maxLagMs: 2_000 };
    // A UUIDv7 made ageMs ago: the newest event a batch indexed.
    const madeAgo = (ageMs: number): string =>
      `${(Date.now() - ageMs)
        .toString(16)
        .padStart(12, '0')
        .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
    const full = (ageMs: number) => ({ taken: 200, newest: madeAgo(0), last_taken: madeAgo(ageMs) });
    // Far inside the bound: three times the batch's 100 ms, a quarter of the time spent indexing.
    expect(restAfter(full(100), 100, true, policy)).toBe(300);
    // A batch slowed to 400 ms with the backlog 1.9 s old: 1,200 ms of rest would leave the next
    // batch starting 3.1 s behind; it rests only until the backlog is maxLagMs old.
    const capped = restAfter(full(1_900), 400, true, policy);
    expect(capped).toBeGreaterThan(0);
    expect(capped).toBeLessThanOrEqual(100);
    // Behind, or nothing arriving: no rest. A batch that emptied the queue waits for more.
    expect(restAfter(full(2_500), 400, true, policy)).toBe(0);
    expect(restAfter(full(100), 400, false, policy)).toBe(0);
    expect(restAfter({ ...full(100), taken: 20 }, 400, true, policy)).toBe(500);
  });

  it('works through a backlog without resting once no new events arrive', async () => {
    await seedEvents(db.pool, { count: 1_000, providers: 4 });
    const timed = timedPool(db.pool);
    // The same share as above: held to it, 200 batches would take at least 20 times their own time.
    const indexer = startSearchIndexer({ pool: timed.pool, logger: silentLogger, batchSize: 5, busyShare: 0.05 });
    indexers.push(indexer);
    await waitFor(async () => (await count('event_search_queue')) === 0, 20_000, 'the backlog indexed');
    expect(await count('event_search')).toBe(1_000);
    // The first batch rests (it has nothing to compare with); from the second on they follow back
    // to back, where the duty cycle would leave 95 % of the time idle.
    expect(shareBusy(timed.batches.filter((batch) => !batch.failed).slice(1))).toBeGreaterThan(0.5);
  });

  it('drain() returns only after a batch the background loop has in flight has committed', async () => {
    await seedEvents(db.pool, { count: 20, providers: 2 });
    // The loop's first batch runs in a transaction held open until `release`, so its queue entries
    // stay locked: drain() sees an empty queue (SKIP LOCKED) while 20 events are not yet indexed.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let taken!: () => void;
    const heldBatch = new Promise<void>((resolve) => (taken = resolve));
    let calls = 0;
    const held = new Proxy(db.pool, {
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver) as unknown;
        if (property !== 'one' || typeof value !== 'function') return value;
        return async (...args: unknown[]): Promise<unknown> => {
          calls += 1;
          if (calls > 1) return (value as (...a: unknown[]) => Promise<unknown>).apply(object, args);
          return object.transaction(async (transaction) => {
            const result = await (transaction.one as (...a: unknown[]) => Promise<unknown>)(...args);
            taken();
            await released;
            return result;
          });
        };
      },
    });
    const indexer = startSearchIndexer({ pool: held, logger: silentLogger, batchSize: 100 });
    indexers.push(indexer);
    await heldBatch;
    let drained = false;
    const draining = indexer.drain().then(() => (drained = true));
    await delay(300);
    expect(drained).toBe(false);
    expect(await count('event_search')).toBe(0);
    release();
    await draining;
    expect(await count('event_search_queue')).toBe(0);
    expect(await count('event_search')).toBe(20);
  });

  it('keeps running through a database outage, warns once per outage and recovers', async () => {
    const target = new URL(db.url);
    const proxy = await startControlledProxy(target.hostname, Number(target.port || 5432));
    const viaProxy = await createDatabasePool(proxy.via(db.url), { maximumPoolSize: 2, connectionTimeoutMs: 2_000 });
    const timed = timedPool(viaProxy);
    const { logger, lines } = capturingLogger();
    const warnings = () =>
      lines.filter((line) => line.level === WARN && line.msg === 'search indexing failed; retrying');
    const recoveries = () => lines.filter((line) => line.level === INFO && line.msg === 'search indexer running again');
    // The retry delay shortened from its 5 s default, so the test does not wait it out twice.
    const retryAfterErrorMs = 1_000;
    const indexer = startSearchIndexer({ pool: timed.pool, logger, idleIntervalMs: 20, retryAfterErrorMs });
    try {
      const before = await store.insert(newEvent());
      await waitFor(async () => (await indexedIds()).includes(before.event.id), 3_000, 'indexing through the proxy');

      await proxy.down();
      const during = await store.insert(newEvent());
      await waitFor(() => warnings().length === 1, 3_000, 'the first failure');
      const failures = timed.batches.filter((batch) => batch.failed).length;
      expect(failures).toBe(1);
      // The next attempt comes after the retry delay; it fails too, and is not logged again.
      await waitFor(() => timed.batches.filter((batch) => batch.failed).length === 2, 5_000, 'the retry');
      const [firstFailure, retry] = timed.batches.filter((batch) => batch.failed);
      expect((retry?.start ?? 0) - (firstFailure?.end ?? 0)).toBeGreaterThanOrEqual(retryAfterErrorMs - 100);
      expect((retry?.start ?? 0) - (firstFailure?.end ?? 0)).toBeLessThan(retryAfterErrorMs + 2_000);
      await delay(200);
      expect(warnings()).toHaveLength(1);
      expect(recoveries()).toHaveLength(0);
      expect(await queuedIds()).toEqual([during.event.id]);

      await proxy.up();
      // The batch commits before the indexer logs it ran again: under load the test can see the
      // empty queue first, so it waits for the log line too.
      await waitFor(
        async () => (await count('event_search_queue')) === 0 && recoveries().length > 0,
        5_000,
        'recovery',
      );
      expect(await indexedIds()).toEqual(sorted([before.event.id, during.event.id]));
      expect(warnings()).toHaveLength(1);
      expect(recoveries()).toHaveLength(1);

      // A second outage is logged again, and stop() does not wait out the retry delay.
      await proxy.down();
      await waitFor(() => warnings().length === 2, 3_000, 'the second outage');
      const stopping = performance.now();
      await indexer.stop();
      expect(performance.now() - stopping).toBeLessThan(500);
    } finally {
      await indexer.stop();
      await proxy.close();
      // slonik's pool.end() rejects (BackendTerminatedUnexpectedlyError) when a connection died with a
      // query in flight, which the second outage may have done; that is the pool's teardown, not the indexer.
      await viaProxy.end().catch(() => undefined);
    }
  }, 25_000);
});

describe('upgrading a database with the generated search columns', () => {
  it('moves the computed values into event_search, drops the columns and keeps search working', async () => {
    const database = await createEmptyDatabase();
    const pool = await createDatabasePool(database.url, { maximumPoolSize: 3 });
    const directory = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
    try {
      for (const name of ['0001-events.sql', '0002-replay-attempts.sql', '0003-settings-and-api-tokens.sql']) {
        await cp(path.join(DEFAULT_MIGRATIONS_DIRECTORY, name), path.join(directory, name));
      }
      expect(await migrate(pool, silentLogger, { directory })).toEqual({ applied: [1, 2, 3], current: 3 });

      const payloads = [JSON_PAYLOAD, FORM_PAYLOAD, BINARY_PAYLOAD, NUL_ESCAPE_PAYLOAD].map((payload) =>
        typeof payload === 'string' ? Buffer.from(payload) : payload,
      );
      await pool.query(sql.unsafe`
        INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, payload, received_at)
        SELECT input.id, 'legacy', 'push', 'open', false, 'no verification: open provider', input.payload,
          timestamptz '2023-06-01T00:00:00Z' + make_interval(secs => input.k)
        FROM ${sql.unnest(
          payloads.map((payload, k) => [`0188f000-0000-7000-8000-00000000000${k}`, payload, k]),
          ['uuid', 'bytea', 'int4'],
        )} AS input(id, payload, k)
      `);
      await seedEvents(pool, { count: 20, providers: 2, eventsOnly: true });
      const before = await pool.any(
        sql.type(searchRow)`SELECT id AS event_id, payload_json::text AS json, payload_tsv::text AS tsv FROM events`,
      );
      expect(before).toHaveLength(24);
      const legacy = new Map(before.map((row) => [row.event_id, { json: row.json, tsv: row.tsv }]));
      expect(legacy.get('0188f000-0000-7000-8000-000000000001')).toEqual({
        json: null,
        tsv: "'abc':2 'acme':5 'domain':4 'team':3 'token':1",
      });
      expect(legacy.get('0188f000-0000-7000-8000-000000000002')).toEqual({ json: null, tsv: null });

      // 0004 is the one under test; later migrations come along, as on a real upgrade.
      expect((await migrate(pool, silentLogger)).applied[0]).toBe(4);

      expect(await searchRows(pool)).toEqual(legacy);
      expect(await queuedIds(pool)).toEqual([]);
      expect(
        await pool.oneFirst(sql.type(countColumn)`
          SELECT count(*)::int AS count FROM event_search JOIN events ON events.id = event_search.event_id
          WHERE payload_json IS NOT DISTINCT FROM switchboard_payload_jsonb(events.payload)
            AND payload_tsv IS NOT DISTINCT FROM switchboard_payload_tsvector(events.payload)
        `),
      ).toBe(24);
      const columns = await pool.anyFirst(
        sql.type(z.object({ column_name: z.string() }))`
          SELECT column_name FROM information_schema.columns WHERE table_name = 'events' AND column_name LIKE 'payload%'
          ORDER BY column_name
        `,
      );
      expect(columns).toEqual(['payload', 'payload_size']);
      const indexes = await pool.anyFirst(
        sql.type(z.object({ indexname: z.string() }))`
          SELECT indexname FROM pg_indexes
          JOIN pg_class ON pg_class.relname = pg_indexes.tablename AND NOT pg_class.relispartition
          WHERE indexname LIKE '%payload%' OR indexname LIKE 'event_search%'
          ORDER BY indexname
        `,
      );
      expect(indexes).toEqual([
        'event_search_json_idx',
        'event_search_pkey',
        'event_search_queue_pkey',
        'event_search_tsv_idx',
      ]);

      const upgraded = createEventStore(pool);
      expect(await searchIds({ q: 'acme' }, upgraded)).toEqual(['0188f000-0000-7000-8000-000000000001']);
      expect(await searchIds({ match: { marker: 'zebra' } }, upgraded)).toEqual([
        '0188f000-0000-7000-8000-000000000000',
      ]);
      expect(await searchIds({ q: 'octo/repo-7' }, upgraded)).toHaveLength(1);
      expect(await searchIds({ match: { action: 'opened' } }, upgraded)).toHaveLength(21);

      // New events on the upgraded schema are queued, found, then indexed.
      const { event } = await upgraded.insert(newEvent({ payload: Buffer.from('{"marker":"zebra","new":true}') }));
      expect(await queuedIds(pool)).toEqual([event.id]);
      expect(await searchIds({ match: { marker: 'zebra' } }, upgraded)).toEqual([
        event.id,
        '0188f000-0000-7000-8000-000000000000',
      ]);
      expect(await drainQueue(pool)).toBe(1);
      expect(await searchIds({ match: { marker: 'zebra' } }, upgraded)).toHaveLength(2);
    } finally {
      await rm(directory, { recursive: true, force: true });
      await pool.end();
      await database.drop();
    }
  });
});
