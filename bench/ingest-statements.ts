/**
 * The PostgreSQL side of ingest, statement by statement, for two schemas side by side (issue 31):
 * the store's real insertMany and the search indexer's batch, each on a connection of its own whose
 * backend's CPU is read from /proc around the work, so load elsewhere on the machine does not count.
 *
 *   git archive b7f1f88 | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/ingest-statements.ts --against /tmp/before
 *   … --batches 1,4,64,256 --events 2000 --rounds 3
 *
 * "before" is the other checkout's store (its migrations, insert and indexer batch), "now" this
 * one's. Each gets a fresh database (dropped at the end). Rounds alternate the variants, so drift
 * in the machine's load hits both alike. Printed per variant and batch size: backend CPU per event
 * of the insert, and of the indexer's batch once the round's events are queued; then each trigger
 * function's own time (track_functions) and the plan of the key lookup.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { sql, type DatabasePool, type Interceptor } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import type { NewEvent } from '../src/store/events/event-store.ts';
import { newEvent } from '../test/support/events.ts';
import { processCpuSeconds } from './cpu-ticks.ts';

/** While set, the next insert statement runs as EXPLAIN (ANALYZE, BUFFERS) and its plan lands here. */
let explaining: { plan: string[] } | null = null;
const explainInterceptor: Interceptor = {
  name: 'explain-insert',
  transformQuery: (_context, query) =>
    explaining && query.sql.trimStart().startsWith('WITH inserted')
      ? { ...query, sql: `EXPLAIN (ANALYZE, BUFFERS) ${query.sql}` }
      : query,
  afterQueryExecution: (_context, query, result) => {
    if (explaining && query.sql.startsWith('EXPLAIN')) {
      explaining.plan = result.rows.map((row) => String(Object.values(row)[0]));
    }
    return null;
  },
};

function payload(): Buffer {
  const sample = JSON.parse(readFileSync(new URL('../catalog/github/issues.json', import.meta.url), 'utf8')) as {
    issue: { body: string; assignees?: unknown };
  };
  delete sample.issue.assignees;
  sample.issue.body = '';
  sample.issue.body = 'x'.repeat(2048 - Buffer.byteLength(JSON.stringify(sample)));
  return Buffer.from(JSON.stringify(sample));
}

const PAYLOAD = payload();

function event(): NewEvent {
  const delivery = randomUUID();
  return newEvent({
    externalId: delivery,
    headers: {
      host: '127.0.0.1:40000',
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/bench',
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'content-length': '2048',
    },
    payload: PAYLOAD,
    summary: 'issues.opened #1 in octo/repo',
    request: { method: 'POST', path: '/hooks/github', query: '', responseStatus: 202 },
  });
}

interface Variant {
  name: string;
  url: string;
  pool: DatabasePool;
  pid: number;
  insertMany: (events: readonly NewEvent[]) => Promise<unknown>;
  index: (pool: DatabasePool, limit: number) => Promise<number>;
}

/** The store of one checkout: its migrations, its insert statement, its indexer batch. */
interface Checkout {
  migrate: typeof import('../src/store/database/migrate.ts').migrate;
  createEventStore: typeof import('../src/store/events/pg-event-store.ts').createEventStore;
  indexQueuedEvents: typeof import('../src/store/events/search-indexer.ts').indexQueuedEvents;
}

async function loadCheckout(root: string): Promise<Checkout> {
  // A checkout from before the store had rooms keeps every file directly in src/store.
  const load = async (file: string): Promise<unknown> => {
    const inRoom = path.join(root, 'src/store', file);
    return import(existsSync(inRoom) ? inRoom : path.join(root, 'src/store', path.basename(file)));
  };
  return {
    migrate: ((await load('database/migrate.ts')) as typeof import('../src/store/database/migrate.ts')).migrate,
    createEventStore: (
      (await load('events/pg-event-store.ts')) as typeof import('../src/store/events/pg-event-store.ts')
    ).createEventStore,
    indexQueuedEvents: (
      (await load('events/search-indexer.ts')) as typeof import('../src/store/events/search-indexer.ts')
    ).indexQueuedEvents,
  };
}

async function openVariant(adminUrl: string, name: string, root: string): Promise<Variant> {
  const checkout = await loadCheckout(root);
  const database = `ingestcpu_${name}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database} TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const setup = await createDatabasePool(url.toString(), { maximumPoolSize: 1 });
  await checkout.migrate(setup, createLogger({ level: 'warn' }));
  await setup.end();
  // One connection, so one backend does all the work and its CPU is the statements'.
  const pool = await createDatabasePool(url.toString(), {
    maximumPoolSize: 1,
    idleTimeoutMs: 600_000,
    interceptors: [explainInterceptor],
  });
  const pid = Number(await pool.oneFirst(sql.unsafe`SELECT pg_backend_pid()`));
  await pool.query(sql.unsafe`SET track_functions = 'pl'`);
  const store = checkout.createEventStore(pool);
  return {
    name,
    url: url.toString(),
    pool,
    pid,
    insertMany: (events) => store.insertMany(events),
    index: checkout.indexQueuedEvents,
  };
}

async function timed(variant: Variant, work: () => Promise<void>): Promise<{ backend: number; node: number }> {
  const before = processCpuSeconds(variant.pid);
  const nodeBefore = process.cpuUsage();
  await work();
  const node = process.cpuUsage(nodeBefore);
  return { backend: processCpuSeconds(variant.pid) - before, node: (node.user + node.system) / 1e6 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      against: { type: 'string' },
      batches: { type: 'string', default: '1,4,64,256' },
      events: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '3' },
      warm: { type: 'string', default: '2000' },
    },
  });
  const adminUrl = process.env['DATABASE_URL'];
  if (!adminUrl) throw new Error('DATABASE_URL must name a PostgreSQL server');
  const batches = values.batches.split(',').map(Number);
  const perBatch = Number(values.events);
  const rounds = Number(values.rounds);
  if (!values.against) throw new Error('--against <directory of another checkout> is required');
  const here = fileURLToPath(new URL('..', import.meta.url));
  const variants = [
    await openVariant(adminUrl, 'before', path.resolve(values.against)),
    await openVariant(adminUrl, 'now', here),
  ];
  const results = new Map<string, number[]>();
  const note = (key: string, value: number): void => {
    results.set(key, [...(results.get(key) ?? []), value]);
  };
  try {
    for (const variant of variants) {
      for (let i = 0; i < Number(values.warm); i += 100) await variant.insertMany(Array.from({ length: 100 }, event));
      while ((await variant.index(variant.pool, 200)) > 0);
    }
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const batch of batches) {
        for (const variant of order) {
          const events = Array.from({ length: perBatch }, event);
          const insert = await timed(variant, async () => {
            for (let i = 0; i < events.length; i += batch) await variant.insertMany(events.slice(i, i + batch));
          });
          note(`${variant.name} insert b=${batch} backend`, (insert.backend * 1e6) / perBatch);
          note(`${variant.name} insert b=${batch} node`, (insert.node * 1e6) / perBatch);
          const index = await timed(variant, async () => {
            while ((await variant.index(variant.pool, 200)) > 0);
          });
          note(`${variant.name} index backend`, (index.backend * 1e6) / perBatch);
        }
      }
    }
    const fmt = (xs: number[]): string =>
      `${xs
        .map((x) => x.toFixed(0))
        .join(' / ')}  (median ${[...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]?.toFixed(0)})`;
    for (const [key, xs] of [...results].sort(([a], [b]) => a.localeCompare(b))) {
      process.stdout.write(`${key.padEnd(34)} µs/event ${fmt(xs)}\n`);
    }
    for (const variant of variants) {
      await variant.pool.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
      const functions = await variant.pool.any(sql.type(
        z.object({ funcname: z.string(), calls: z.unknown(), total_ms: z.unknown(), self_ms: z.unknown() }),
      )`
        SELECT funcname, calls, round(total_time::numeric, 1) AS total_ms, round(self_time::numeric, 1) AS self_ms
        FROM pg_stat_user_functions ORDER BY self_time DESC
      `);
      process.stdout.write(`\n${variant.name}: trigger and helper functions (whole run)\n`);
      for (const row of functions) process.stdout.write(`  ${Object.values(row).map(String).join('  ')}\n`);
      for (const batch of [1, 64, 256]) {
        explaining = { plan: [] };
        await variant.insertMany(Array.from({ length: batch }, event)).catch(() => undefined);
        process.stdout.write(`\n${variant.name}: EXPLAIN (ANALYZE, BUFFERS) of a ${batch}-event insert\n`);
        for (const line of explaining.plan) process.stdout.write(`  ${line}\n`);
        explaining = null;
      }
    }
  } finally {
    for (const variant of variants) {
      await variant.pool.end();
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${new URL(variant.url).pathname.slice(1)} WITH (FORCE)`);
      await admin.end();
    }
  }
}

await main();
