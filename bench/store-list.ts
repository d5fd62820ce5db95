/**
 * List-query benchmark: 1,000,000 events across 10 providers, then p50/p99 of store.list() for the
 * first page, page 1000 reached by cursor, and a provider + event_type page, plus the plans.
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
import { encodeCursor } from '../src/store/cursor.ts';
import { createDatabasePool, redactUrl } from '../src/store/database.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/store/embedded-postgres.ts';
import type { ListQuery } from '../src/store/event-store.ts';
import { buildListSql, resolveListQuery } from '../src/store/list-query.ts';
import { migrate } from '../src/store/migrate.ts';
import { createEventStore } from '../src/store/pg-event-store.ts';
import { microsFromRfc3339 } from '../src/store/timestamps.ts';
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
const DEEP_PAGE = 1000;

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

const planJson = z.array(z.object({ 'Execution Time': z.number(), 'Planning Time': z.number() }).passthrough());

/** Server-side time of one execution, from EXPLAIN ANALYZE: what the database itself spends. */
async function serverTime(pool: DatabasePool, query: ListQuery): Promise<number> {
  const [plan] = await pool.oneFirst(
    sql.type(
      z.object({ 'QUERY PLAN': planJson }),
    )`EXPLAIN (ANALYZE, FORMAT JSON) ${buildListSql(resolveListQuery(query))}`,
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
    )`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${buildListSql(resolveListQuery(query))}`,
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

    // The cursor that ends page 999 is the key of row 999 × 50; walking there proves it matches.
    const key = await pool.one(sql.type(z.object({ received_at_utc: z.string(), id: z.string() }))`
      SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_at_utc, id::text
      FROM events ORDER BY received_at DESC, id DESC OFFSET ${(DEEP_PAGE - 1) * PAGE - 1} LIMIT 1
    `);
    const deepCursor = encodeCursor({ receivedAtMicros: microsFromRfc3339(key.received_at_utc) ?? 0n, id: key.id });
    let walked: string | undefined;
    const walkStarted = performance.now();
    for (let page = 1; page < DEEP_PAGE; page += 1)
      walked = (await store.list({ limit: PAGE, cursor: walked })).next_cursor;
    out(
      `walked to page ${DEEP_PAGE} by cursor in ${((performance.now() - walkStarted) / 1000).toFixed(1)} s; cursor ${walked === deepCursor ? 'matches' : 'DIFFERS FROM'} the computed one`,
    );

    const filter: ListQuery = { provider: 'provider-3', eventType: 'issues.opened' };
    let filteredDeep: string | undefined;
    for (let page = 1; page < 100; page += 1)
      filteredDeep = (await store.list({ ...filter, limit: PAGE, cursor: filteredDeep })).next_cursor;

    const cases: Array<[string, ListQuery]> = [
      ['first page', { limit: PAGE }],
      [`page ${DEEP_PAGE} (cursor)`, { limit: PAGE, cursor: deepCursor }],
      ['provider + event_type, first page', { ...filter, limit: PAGE }],
      ['provider + event_type, page 100', { ...filter, limit: PAGE, cursor: filteredDeep }],
      ['provider + dotless event_type', { provider: 'provider-3', eventType: 'pull_request', limit: PAGE }],
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
    out(`${''.padEnd(40)}  store.list() end to end        database (plan + execute)`);
    out(`${'case'.padEnd(40)}  p50     p99     max            p50     p99`);
    for (const [index, [label]] of cases.entries()) {
      const e = endToEnd[index];
      const d = server[index];
      if (!e || !d) continue;
      out(`${label.padEnd(40)}  ${ms(e.p50)}  ${ms(e.p99)}  ${ms(e.max)}         ${ms(d.p50)}  ${ms(d.p99)}`);
    }
    const [first, deep] = endToEnd;
    const [firstDb, deepDb] = server;
    if (first && deep && firstDb && deepDb) {
      out(
        `ratio page ${DEEP_PAGE} / first page: end to end p50 ${(deep.p50 / first.p50).toFixed(2)}, p99 ${(deep.p99 / first.p99).toFixed(2)}; database p50 ${(deepDb.p50 / firstDb.p50).toFixed(2)}`,
      );
    }

    for (const [label, query] of cases.filter((_, i) => i !== 3)) {
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
