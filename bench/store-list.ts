/**
 * List-query benchmark: 1,000,000 events across 10 providers, then p50/p99 of store.list() for the
 * first page and page 1000 reached by cursor in both orders, provider + event_type pages, the
 * since-id oldest-first catch-up `switchboard listen` does, and an until bound, plus the plans.
 *
 *   npx tsx bench/store-list.ts            # embedded PostgreSQL in a temp dir
 *   DATABASE_URL=postgres://… npx tsx bench/store-list.ts   # a scratch database on that server
 *
 * Options: --events N (default 1000000), --iterations N (default 400), --keep (keep the data).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPool, sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../src/log/logger.ts';
import { encodeCursor } from '../src/store/events/cursor.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { redactUrl } from '../src/log/redact-url.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/postgres/embedded-postgres.ts';
import type { ListOrder } from '../generated/constants.ts';
import type { ListQuery } from '../src/store/events/event-store.ts';
import {
  buildListSql,
  resolveListQuery,
  type ListPosition,
  type ResolvedListQuery,
} from '../src/store/events/list-statement.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { createEventStore } from '../src/store/events/pg-event-store.ts';
import { microsFromRfc3339 } from '../src/store/sql/timestamps.ts';
import { seedEvents } from '../test/support/seed.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    iterations: { type: 'string', default: '400' },
    keep: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(args.events);
const ITERATIONS = Number(args.iterations);
const PROVIDERS = 10;
const PAGE = 50;
/** Page 1000, or half-way down a smaller --events run. */
const DEEP_PAGE = Math.min(1000, Math.floor(EVENTS / PAGE / 2));
/** The targets the list must meet at 1,000,000 events, in either order. */
const TARGET_P50_MS = 5;
const TARGET_P99_MS = 20;
const TARGET_DEEP_RATIO = 1.5;

const logger = createLogger({ level: 'warn' });
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

interface Target {
  url: string;
  cleanup(): Promise<void>;
}

async function target(): Promise<Target> {
  const external = process.env.DATABASE_URL?.trim();
  if (external) {
    const name = `switchboard_bench_${process.pid}`;
    const admin = await createPool(external, { maximumPoolSize: 1 });
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.end();
    const url = new URL(external);
    url.pathname = `/${name}`;
    out(`database: ${redactUrl(url.toString())} (scratch database on DATABASE_URL's server)`);
    return {
      url: url.toString(),
      cleanup: async () => {
        if (args.keep) return;
        const again = await createPool(external, { maximumPoolSize: 1 });
        await again.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
        await again.end();
      },
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-'));
  // The default durable settings, as a real embedded deployment runs.
  const server: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, logger });
  out(`database: embedded PostgreSQL 17 on 127.0.0.1:${server.port} (${dataDir})`);
  return {
    url: server.url,
    cleanup: async () => {
      await server.stop();
      if (!args.keep) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const indexRow = z.object({ name: z.string(), definition: z.string() });

/**
 * Loading a million rows is far faster into a table without indexes, then building each index
 * once. The definitions are read back from the migrated schema, so the indexes are exactly the
 * ones the migrations create.
 */
async function seed(pool: DatabasePool): Promise<void> {
  await pool.connect(async (connection) => {
    // More sort memory makes the GIN (full-text) index build several times faster.
    await connection.query(sql.unsafe`SET maintenance_work_mem = '512MB'`);
    const indexes = await connection.any(sql.type(indexRow)`
      SELECT indexname AS name, indexdef AS definition FROM pg_indexes
      WHERE tablename = 'events' AND indexname <> 'events_pkey'
    `);
    for (const index of indexes) await connection.query(sql.unsafe`DROP INDEX ${sql.identifier([index.name])}`);
    const chunk = 100_000;
    let started = performance.now();
    for (let start = 1; start <= EVENTS; start += chunk) {
      await seedEvents(connection, {
        count: Math.min(chunk, EVENTS - start + 1),
        providers: PROVIDERS,
        start,
        stepMs: 10,
      });
    }
    out(`seeded ${EVENTS.toLocaleString('en')} events across ${PROVIDERS} providers in ${seconds(started)}`);
    started = performance.now();
    for (const index of indexes) await connection.query(sql.unsafe(rawTemplate(index.definition)));
    out(`built the ${indexes.length} secondary indexes in ${seconds(started)}`);
    started = performance.now();
    await connection.query(sql.unsafe`VACUUM ANALYZE events`);
    out(`VACUUM ANALYZE in ${seconds(started)}`);
  });
}

const seconds = (since: number): string => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** Index definitions come from pg_indexes, i.e. from PostgreSQL itself; slonik needs a template. */
function rawTemplate(text: string): TemplateStringsArray {
  return Object.freeze(Object.assign([text], { raw: Object.freeze([text]) }));
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

interface Timing {
  p50: number;
  p99: number;
  max: number;
}

function summarize(samples: number[]): Timing {
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), max: samples.at(-1) ?? Number.NaN };
}

/**
 * Runs the cases round-robin rather than one after another, so background load on the machine
 * (this box is shared) lands on every case alike and the ratios between them stay meaningful.
 */
async function measureInterleaved(runs: ReadonlyArray<() => Promise<unknown>>): Promise<Timing[]> {
  for (let i = 0; i < 50; i += 1) for (const run of runs) await run();
  const samples = runs.map((): number[] => []);
  for (let i = 0; i < ITERATIONS; i += 1) {
    for (const [index, run] of runs.entries()) {
      const started = performance.now();
      await run();
      samples[index]?.push(performance.now() - started);
    }
  }
  return samples.map(summarize);
}

const positionRow = z.object({ receivedAt: z.string(), id: z.string() });

/** The query as the store runs it: since/until event ids resolved to their positions. */
async function resolved(pool: DatabasePool, query: ListQuery): Promise<ResolvedListQuery> {
  const base = resolveListQuery(query);
  const positionOf = (id: string): Promise<ListPosition> =>
    pool.one(sql.type(positionRow)`
      SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "receivedAt", id::text
      FROM events WHERE id = ${id}
    `);
  return {
    ...base,
    after: base.since !== null && 'eventId' in base.since ? await positionOf(base.since.eventId) : null,
    upTo: base.until !== null && 'eventId' in base.until ? await positionOf(base.until.eventId) : null,
  };
}

const planJson = z.array(z.object({ 'Execution Time': z.number(), 'Planning Time': z.number() }).passthrough());

/** Server-side time of one execution, from EXPLAIN ANALYZE: what the database itself spends. */
async function serverTime(pool: DatabasePool, query: ListQuery): Promise<number> {
  const [plan] = await pool.oneFirst(
    sql.type(
      z.object({ 'QUERY PLAN': planJson }),
    )`EXPLAIN (ANALYZE, FORMAT JSON) ${buildListSql(await resolved(pool, query))}`,
  );
  return (plan?.['Execution Time'] ?? Number.NaN) + (plan?.['Planning Time'] ?? Number.NaN);
}

const ms = (value: number): string => value.toFixed(2).padStart(6);

/** Like measureInterleaved, but the runs report their own duration. */
async function measureTimes(runs: ReadonlyArray<() => Promise<number>>): Promise<Timing[]> {
  const samples = runs.map((): number[] => []);
  for (let i = 0; i < ITERATIONS; i += 1) {
    for (const [index, run] of runs.entries()) samples[index]?.push(await run());
  }
  return samples.map(summarize);
}

async function explain(pool: DatabasePool, query: ListQuery): Promise<string[]> {
  const lines = await pool.anyFirst(
    sql.type(
      z.object({ 'QUERY PLAN': z.string() }),
    )`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${buildListSql(await resolved(pool, query))}`,
  );
  return [...lines];
}

async function main(): Promise<void> {
  const database = await target();
  const pool = await createDatabasePool(database.url, { statementTimeoutMs: 600_000, maximumPoolSize: 2 });
  try {
    await migrate(pool, logger);
    await seed(pool);
    const store = createEventStore(pool);

    // The cursor that ends page 999 in each order is the key of row 999 × 50 in that order, bound
    // to the query (order, no filter); walking there proves the computed one matches.
    const deepCursor = async (order: ListOrder): Promise<string> => {
      const key = await pool.one(sql.type(z.object({ received_at_utc: z.string(), id: z.string() }))`
        SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_at_utc, id::text
        FROM events ORDER BY received_at ${order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`},
          id ${order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`}
        OFFSET ${(DEEP_PAGE - 1) * PAGE - 1} LIMIT 1
      `);
      const computed = encodeCursor({
        receivedAtMicros: microsFromRfc3339(key.received_at_utc) ?? 0n,
        id: key.id,
        fingerprint: resolveListQuery({ order, limit: PAGE }).fingerprint,
      });
      let walked: string | undefined;
      const walkStarted = performance.now();
      for (let page = 1; page < DEEP_PAGE; page += 1)
        walked = (await store.list({ order, limit: PAGE, cursor: walked })).next_cursor;
      out(
        `${order}: walked to page ${DEEP_PAGE} by cursor in ${((performance.now() - walkStarted) / 1000).toFixed(1)} s; cursor ${walked === computed ? 'matches' : 'DIFFERS FROM'} the computed one`,
      );
      return computed;
    };
    const deepNewest = await deepCursor('newest_first');
    const deepOldest = await deepCursor('oldest_first');

    const filter: ListQuery = { provider: 'provider-3', eventType: 'issues.opened' };
    const cursorAfter = async (query: ListQuery, pages: number): Promise<string | undefined> => {
      let cursor: string | undefined;
      for (let page = 1; page < pages; page += 1) cursor = (await store.list({ ...query, cursor })).next_cursor;
      return cursor;
    };
    const filteredDeep = await cursorAfter({ ...filter, limit: PAGE }, 100);
    // What `switchboard listen` does to catch up: everything after the last event it saw, oldest
    // first, by cursor. The last event seen is half-way back.
    const middle = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id::text FROM events ORDER BY received_at DESC, id DESC OFFSET ${Math.floor(EVENTS / 2)} LIMIT 1
    `);
    const catchUp: ListQuery = { since: middle, order: 'oldest_first', limit: PAGE };
    const catchUpDeep = await cursorAfter(catchUp, 100);

    const cases: Array<[string, ListQuery]> = [
      ['first page', { limit: PAGE }],
      [`page ${DEEP_PAGE} (cursor)`, { limit: PAGE, cursor: deepNewest }],
      ['oldest first, first page', { order: 'oldest_first', limit: PAGE }],
      [`oldest first, page ${DEEP_PAGE} (cursor)`, { order: 'oldest_first', limit: PAGE, cursor: deepOldest }],
      ['provider + event_type, first page', { ...filter, limit: PAGE }],
      ['provider + event_type, page 100', { ...filter, limit: PAGE, cursor: filteredDeep }],
      ['provider + event_type, oldest first', { ...filter, order: 'oldest_first', limit: PAGE }],
      ['provider + dotless event_type', { provider: 'provider-3', eventType: 'pull_request', limit: PAGE }],
      // Served by the family indexes since migration 0009 dropped the per-type ones.
      ['exact event_type, first page', { eventType: 'issues.opened', limit: PAGE }],
      ['exact event_type, oldest first', { eventType: 'issues.opened', order: 'oldest_first', limit: PAGE }],
      ['since id, oldest first (catch-up)', catchUp],
      ['since id, oldest first, page 100', { ...catchUp, cursor: catchUpDeep }],
      ['until time, oldest first', { until: '2024-01-01T01:00:00Z', order: 'oldest_first', limit: PAGE }],
    ];
    for (const [label, query] of cases) {
      const page = await store.list(query);
      if (page.events.length !== PAGE) throw new Error(`${label}: expected ${PAGE} events, got ${page.events.length}`);
    }
    const endToEnd = await measureInterleaved(
      cases.map(
        ([, query]) =>
          () =>
            store.list(query),
      ),
    );
    const server = await measureTimes(
      cases.map(
        ([, query]) =>
          () =>
            serverTime(pool, query),
      ),
    );
    out();
    out(`latency in ms over ${ITERATIONS} interleaved runs per case (after 50 warm-up rounds)`);
    out(`${''.padEnd(40)}  store.list() end to end        database (plan + execute)   targets`);
    out(
      `${'case'.padEnd(40)}  p50     p99     max            p50     p99       p50 ≤ ${TARGET_P50_MS} ms, p99 ≤ ${TARGET_P99_MS} ms`,
    );
    for (const [index, [label]] of cases.entries()) {
      const e = endToEnd[index];
      const d = server[index];
      if (!e || !d) continue;
      const met = e.p50 <= TARGET_P50_MS && e.p99 <= TARGET_P99_MS ? 'met' : 'MISSED';
      out(
        `${label.padEnd(40)}  ${ms(e.p50)}  ${ms(e.p99)}  ${ms(e.max)}         ${ms(d.p50)}  ${ms(d.p99)}     ${met}`,
      );
    }
    const ratio = (deepIndex: number, firstIndex: number, label: string): void => {
      const deep = endToEnd[deepIndex];
      const first = endToEnd[firstIndex];
      const deepDb = server[deepIndex];
      const firstDb = server[firstIndex];
      if (!deep || !first || !deepDb || !firstDb) return;
      const p50 = deep.p50 / first.p50;
      out(
        `ratio ${label}: end to end p50 ${p50.toFixed(2)}, p99 ${(deep.p99 / first.p99).toFixed(2)}; database p50 ${(deepDb.p50 / firstDb.p50).toFixed(2)} (target ≤ ${TARGET_DEEP_RATIO}: ${p50 <= TARGET_DEEP_RATIO ? 'met' : 'MISSED'})`,
      );
    };
    ratio(1, 0, `newest first, page ${DEEP_PAGE} / first page`);
    ratio(3, 2, `oldest first, page ${DEEP_PAGE} / first page`);
    ratio(2, 0, 'oldest first / newest first, first page');

    for (const [label, query] of cases.filter(([label]) => !label.includes('page 100'))) {
      out();
      out(`EXPLAIN ANALYZE — ${label}:`);
      for (const line of await explain(pool, query)) out(`  ${line}`);
    }
  } finally {
    await pool.end();
    await database.cleanup();
  }
}

await main();
