/**
 * Time partitions at scale (docs/adr/time-partitions.md): N events of about 2 KiB spread evenly
 * over D days (one partition per UTC day), all indexed for search, then
 * - list_webhook_events p50: the first page, and a page 100,000 events deep (by cursor);
 * - search p50/p99 for a rare word, a common word, an OR, a prefix and a phrase;
 * - an id lookup (store.get) p50;
 * - retention of the oldest full day's partition (one run of the job, after one that drops what precedes it);
 * - disk per million events (events, search rows, indexes, external-id keys).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/scale.ts --events 200000 --days 30
 *
 * Without DATABASE_URL an embedded PostgreSQL runs in a temporary directory. The database is
 * dropped at the end, unless --keep (with DATABASE_URL): its name is printed, and a later run with
 * --reuse <name> measures it again without seeding (10M events take over an hour to seed).
 * --skip-retention leaves the oldest partition in place so that the database can be reused as it is.
 *
 * Seeding drops the secondary indexes (list, search, external-id time) and builds them again after
 * the load, and indexes the events for search in bulk SQL: the same rows and indexes as ingest and
 * the indexer would make, an order of magnitude sooner. A GIN index built in one go is packed
 * tighter than one grown row by row, so the disk figure is a lower bound for the search part.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import type { ListQuery } from '../src/store/events/event-store.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { ensurePartitions } from '../src/store/partitions/partitions.ts';
import { createEventStore } from '../src/store/events/pg-event-store.ts';
import { startRetention, type RetentionResult } from '../src/store/partitions/retention.ts';
import { openKeptBenchDatabase } from './bench-database.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    days: { type: 'string', default: '30' },
    iterations: { type: 'string', default: '60' },
    chunk: { type: 'string', default: '20000' },
    keep: { type: 'boolean', default: false },
    reuse: { type: 'string' },
    'skip-retention': { type: 'boolean', default: false },
    // For a database whose JSON index is not built (a seed cut short to measure in time).
    'skip-match': { type: 'boolean', default: false },
    // A seed stopped half way (--keep): with --reuse, go on from this event number; --base is the
    // seed's time base (ms), the first run's start, which it printed.
    'resume-from': { type: 'string' },
    base: { type: 'string' },
    // Another checkout of switchboard (e.g. /work/main): its store is timed too, interleaved call
    // by call with this one's on the same database and pool, for the searches.
    against: { type: 'string' },
  },
});
const EVENTS = Number(args.events);
const DAYS = Number(args.days);
const ITERATIONS = Number(args.iterations);
const CHUNK = Number(args.chunk);

const logger = createLogger({ level: 'warn' });
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

const percentile = (samples: number[], p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

type Percentiles = { p50: number; p99: number };

/** Two functions timed in turn, call by call, so a loaded machine's swings fall on both alike. */
async function timeInterleaved(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  iterations = ITERATIONS,
): Promise<[Percentiles, Percentiles]> {
  await a();
  await b();
  const samples: [number[], number[]] = [[], []];
  for (let i = 0; i < iterations; i += 1) {
    for (const [index, fn] of (i % 2 === 0 ? [a, b] : [b, a]).entries()) {
      const started = process.hrtime.bigint();
      await fn();
      samples[(i % 2 === 0 ? index : 1 - index) as 0 | 1].push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }
  return [
    { p50: percentile(samples[0], 50), p99: percentile(samples[0], 99) },
    { p50: percentile(samples[1], 50), p99: percentile(samples[1], 99) },
  ];
}

async function time(fn: () => Promise<unknown>, iterations = ITERATIONS): Promise<Percentiles> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const started = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** Secondary indexes of the tables seeding fills (the primary keys stay: foreign keys need them). */
const DEFERRED_INDEX_TABLES = ['events', 'event_search', 'event_external_ids'];

/**
 * Drops the secondary indexes and the foreign keys to events (checked row by row during a load,
 * as one join when added), and keeps the statements that make them again in bench_deferred_ddl,
 * so that a seed stopped half way can be resumed (--reuse, --resume-from).
 */
async function deferIndexes(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`CREATE TABLE bench_deferred_ddl (ord serial PRIMARY KEY, ddl text NOT NULL)`);
  // The catalog writes a partitioned table's index as ON ONLY (the parent's alone); made again it
  // must cover every partition.
  await pool.query(sql.unsafe`
    INSERT INTO bench_deferred_ddl (ddl)
    SELECT replace(pg_get_indexdef(i.indexrelid), ' ON ONLY ', ' ON ') FROM pg_index i
    WHERE i.indrelid = ANY(${sql.array(DEFERRED_INDEX_TABLES, 'text')}::regclass[]) AND NOT i.indisprimary
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
  `);
  await pool.query(sql.unsafe`
    INSERT INTO bench_deferred_ddl (ddl)
    SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE contype = 'f' AND confrelid = 'events'::regclass AND conparentid = 0
      AND conrelid = ANY(${sql.array(['event_search', 'event_external_ids'], 'text')}::regclass[])
  `);
  await pool.query(sql.unsafe`
    DO $$
    DECLARE r record;
    BEGIN
      FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint WHERE contype = 'f'
        AND confrelid = 'events'::regclass AND conparentid = 0
        AND conrelid IN ('event_search'::regclass, 'event_external_ids'::regclass) LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname);
      END LOOP;
      FOR r IN SELECT i.indexrelid::regclass AS name FROM pg_index i
        WHERE i.indrelid IN ('events'::regclass, 'event_search'::regclass, 'event_external_ids'::regclass)
          AND NOT i.indisprimary AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) LOOP
        EXECUTE format('DROP INDEX %s', r.name);
      END LOOP;
    END
    $$
  `);
}

/** Makes again what deferIndexes dropped, one statement at a time, with room to sort in memory. */
async function restoreIndexes(pool: DatabasePool, url: string): Promise<void> {
  const statements = await pool.anyFirst(sql.type(z.object({ ddl: z.string() }))`
    SELECT ddl FROM bench_deferred_ddl ORDER BY ord
  `);
  // pg, not slonik: the statements are the catalog's own text, not a template, and take minutes.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET maintenance_work_mem = '512MB'`);
    await client.query(`SET statement_timeout = 0`);
    for (const ddl of statements) {
      await client.query(ddl);
      process.stderr.write(`done: ${ddl.slice(0, 80)} (${new Date().toISOString()})\n`);
    }
    await client.query(`DROP TABLE bench_deferred_ddl`);
  } finally {
    await client.end();
  }
}

/**
 * Events numbered from..EVENTS over the DAYS days before `base` (ms), ~2 KiB each, UUIDv7 ids
 * from their time, in chunks, each indexed for search as the indexer would.
 */
async function seed(pool: DatabasePool, url: string, from: number, base: number): Promise<void> {
  const spanMs = DAYS * 86_400_000;
  if (from === 1) await deferIndexes(pool);
  const at = (g: FragmentSqlToken) =>
    sql.fragment`${new Date(base).toISOString()}::timestamptz - make_interval(secs => ${spanMs / 1000})
      + ${g} * make_interval(secs => ${spanMs / 1000 / EVENTS})`;
  let next = from;
  let done = 0;
  const started = Date.now();
  // Two writers: the machine has two cores, and one statement leaves PostgreSQL waiting on its WAL.
  const writer = async (): Promise<void> => {
    for (let start = next; start <= EVENTS; start = next) {
      next = start + CHUNK;
      const end = Math.min(EVENTS, start + CHUNK - 1);
      await pool.transaction(async (tx) => {
        // The keys written by the same statement, as the store's insert does (migration 0021).
        await tx.query(sql.unsafe`
          WITH inserted AS (
          INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, external_id, content_type,
            headers, payload, received_at)
          SELECT
            (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8'
              || substr(md5(g::text), 4, 15))::uuid,
            'provider-' || (g % 10), 'issues.opened', 'signed', true, 'hmac-sha256 valid', 'delivery-' || g,
            'application/json', '{"content-type": "application/json"}'::jsonb,
            convert_to(format(
              '{"id":%s,"action":"opened","word":"w%s","sender":{"login":"user%s"},"body":"%s"}',
              g, g % 50000, g % 1000, repeat(md5(g::text) || ' ', 55)), 'UTF8'),
            t
          FROM generate_series(${start}::bigint, ${end}::bigint) AS g, LATERAL (SELECT ${at(sql.fragment`g`)}) AS at(t)
          RETURNING id, provider, external_id, received_at
          )
          INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
          SELECT provider, external_id, id, received_at FROM inserted
        `);
        // What the indexer does for this chunk's events, so they are never queued.
        await tx.query(sql.unsafe`
          WITH chunk AS (
            SELECT id, received_at, payload FROM events
            WHERE received_at >= ${at(sql.fragment`${start}::bigint`)} AND received_at <= ${at(sql.fragment`${end}::bigint`)}
          )
          INSERT INTO event_search (event_id, event_received_at, payload_json, payload_tsv)
          SELECT id, received_at, switchboard_payload_jsonb(payload), switchboard_payload_tsvector(payload) FROM chunk
        `);
      });
      done += end - start + 1;
      const rate = done / ((Date.now() - started) / 1000);
      process.stderr.write(
        `seeded ${start - 1 + (end - start + 1)}/${EVENTS}: ${done} this run (${rate.toFixed(0)}/s, ${new Date().toISOString()})\n`,
      );
    }
  };
  await Promise.all([writer(), writer()]);
  await restoreIndexes(pool, url);
  // ANALYZE, not VACUUM: at 10M events a vacuum reads everything again; autovacuum gets to it.
  // But the search queue, emptied chunk by chunk, is vacuumed now: every search reads its key
  // index, and 10M dead entries in it made a rare-word search take 5.3 s.
  await pool.query(sql.unsafe`VACUUM ANALYZE event_search_queue`);
  await pool.query(sql.unsafe`ANALYZE`);
}

const dayRow = z.object({
  lower: z.string(),
  upper: z.string(),
  n: z.number(),
  age_s: z.number(),
  cutoff_s: z.number(),
});

/**
 * Retention of one full day (the target of issue 31 names a 1M-row day): first one run of the job
 * drops everything before the oldest day holding at least 90 % of a day's share of events (the
 * part-filled first day, and any empty older partitions), then a second run drops that day alone.
 * max_age is set in seconds so that each cutoff falls on the partition bound: no rows by row.
 */
async function measureRetention(pool: DatabasePool, shape: SeedShape): Promise<void> {
  const day = await pool.maybeOne(sql.type(dayRow)`
    SELECT lower_bound::text AS lower, upper_bound::text AS upper, n,
      floor(extract(epoch FROM now() - lower_bound))::float8 AS age_s,
      floor(extract(epoch FROM now() - upper_bound))::float8 AS cutoff_s
    FROM event_partitions, LATERAL (
      SELECT count(*)::int AS n FROM events WHERE received_at >= lower_bound AND received_at < upper_bound
    ) AS counted
    WHERE n >= ${Math.floor((shape.events / shape.days) * 0.9)} ORDER BY lower_bound LIMIT 1
  `);
  if (!day) {
    out('retention                  no full day partition to drop');
    return;
  }
  const run = async (maxAgeSeconds: number): Promise<{ ms: number; pruned: RetentionResult }> => {
    const retention = startRetention({
      pool,
      config: { max_age: `${maxAgeSeconds}s`, interval_seconds: 3600 },
      logger,
      initialDelayMs: 3_600_000,
      batchSize: 1000,
    });
    const started = process.hrtime.bigint();
    const pruned = await retention.runOnce();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    await retention.stop();
    return { ms, pruned };
  };
  const before = await run(day.age_s);
  out(
    `retention before the day   ${before.ms.toFixed(0)} ms: ${before.pruned.droppedPartitions ?? 0} partition(s) dropped, ` +
      `${before.pruned.deletedByAge} rows deleted by row`,
  );
  const whole = await run(day.cutoff_s);
  out(
    `retention of one full day  ${whole.ms.toFixed(0)} ms: ${whole.pruned.droppedPartitions ?? 0} partition(s) dropped ` +
      `(${day.lower} to ${day.upper}, ${day.n} events), ${whole.pruned.deletedByAge} rows deleted by row`,
  );
}

/** How many events the measured database holds, over how many days. */
interface SeedShape {
  events: number;
  days: number;
}

/**
 * A reused database is described by what it holds, not by --events and --days (whose defaults
 * would otherwise name a 200,000-event seed and divide its disk by that): the events stored, and
 * the day partitions holding any (a probe per partition, not a scan of the rows).
 */
async function storedShape(pool: DatabasePool): Promise<SeedShape> {
  return pool.one(sql.type(z.object({ events: z.number(), days: z.number() }))`
    SELECT (SELECT count(*)::float8 FROM events) AS events,
      (SELECT count(*)::float8 FROM event_partitions
        WHERE EXISTS (SELECT 1 FROM events WHERE received_at >= lower_bound AND received_at < upper_bound)) AS days
  `);
}

async function main(): Promise<void> {
  const database = await openKeptBenchDatabase(logger, 'sb_scale', { keep: args.keep, reuse: args.reuse });
  // A seeding chunk takes tens of seconds on a loaded machine: no statement timeout here.
  const pool = await createDatabasePool(database.url, { maximumPoolSize: 4, statementTimeoutMs: 3_600_000 });
  try {
    const seedStarted = Date.now();
    if (!args.reuse) {
      await migrate(pool, logger);
      for (let day = DAYS + 1; day >= 0; day -= 1) {
        await ensurePartitions(pool, 'day', new Date(Date.now() - day * 86_400_000).toISOString());
      }
      process.stderr.write(`seed base ${seedStarted}\n`);
      await seed(pool, database.url, 1, seedStarted);
    } else if (args['resume-from'] !== undefined) {
      await seed(pool, database.url, Number(args['resume-from']), Number(args.base));
    }
    const partitions = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM event_partitions
    `);
    const shape: SeedShape = args.reuse ? await storedShape(pool) : { events: EVENTS, days: DAYS };
    const deepPage = Math.min(100_000, shape.events - 100);
    out(
      `# bench/scale.ts: ${shape.events} events over ${shape.days} days, ${partitions} day partitions (${database.where})`,
    );
    if (!args.reuse) out(`seeded and indexed in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s`);

    const store = createEventStore(pool);
    const first = await time(() => store.list({ limit: 50 }));
    // A cursor 100,000 events deep: the position of that event, as the store would hand it out.
    let deepCursor: string | undefined;
    {
      let query: ListQuery = { limit: 200 };
      for (let seen = 0; seen < deepPage; seen += 200) {
        const page = await store.list(query);
        deepCursor = page.next_cursor;
        if (!deepCursor) break;
        query = { limit: 200, cursor: deepCursor };
      }
    }
    const deepQuery: ListQuery = deepCursor === undefined ? { limit: 50 } : { limit: 50, cursor: deepCursor };
    const deep = await time(() => store.list(deepQuery));
    out(`list first page            p50 ${first.p50.toFixed(2)} ms  p99 ${first.p99.toFixed(2)} ms`);
    out(`list page ${deepPage} deep      p50 ${deep.p50.toFixed(2)} ms  p99 ${deep.p99.toFixed(2)} ms`);

    const searches: Array<[string, ListQuery]> = [
      ['rare', { q: 'w12345' }],
      ['common', { q: 'opened' }],
      ['OR', { q: 'w12345 or w23456' }],
      // websearch_to_tsquery has no prefix operator: `w1234*` is the word w1234 (bounded-search.md).
      ['prefix', { q: 'w1234*' }],
      ['match', { match: { sender: { login: 'user7' } } }],
      ['phrase', { q: '"action opened"' }],
    ];
    const against =
      args.against === undefined
        ? null
        : (
            (await import(
              // A checkout from before the store had rooms keeps the file directly in src/store.
              [
                `${args.against}/src/store/events/pg-event-store.ts`,
                `${args.against}/src/store/pg-event-store.ts`,
              ].find((file) => existsSync(file)) ?? `${args.against}/src/store/events/pg-event-store.ts`
            )) as typeof import('../src/store/events/pg-event-store.ts')
          ).createEventStore(pool);
    for (const [label, query] of searches) {
      if (label === 'match' && args['skip-match']) continue;
      if (against === null) {
        const result = await time(() => store.list({ ...query, limit: 50 }));
        out(`search ${label.padEnd(8)}            p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`);
        continue;
      }
      const [mine, theirs] = await timeInterleaved(
        () => store.list({ ...query, limit: 50 }),
        () => against.list({ ...query, limit: 50 }),
      );
      out(
        `search ${label.padEnd(8)}            p50 ${mine.p50.toFixed(2)} ms  p99 ${mine.p99.toFixed(2)} ms` +
          `   (${args.against}: p50 ${theirs.p50.toFixed(2)} ms  p99 ${theirs.p99.toFixed(2)} ms)`,
      );
    }
    const [someEvent] = (await store.list({ limit: 1 })).events;
    if (someEvent) {
      const lookup = await time(() => store.get(someEvent.id));
      out(`get by id                  p50 ${lookup.p50.toFixed(2)} ms  p99 ${lookup.p99.toFixed(2)} ms`);
    }

    const sizes = await pool.one(sql.type(z.object({ events: z.number(), search: z.number(), keys: z.number() }))`
      SELECT
        (SELECT sum(pg_total_relation_size(inhrelid))::float8 FROM pg_inherits WHERE inhparent = 'events'::regclass) AS events,
        (SELECT sum(pg_total_relation_size(inhrelid))::float8 FROM pg_inherits WHERE inhparent = 'event_search'::regclass) AS search,
        (SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::float8 FROM pg_inherits
          WHERE inhparent = 'event_external_ids'::regclass) + pg_total_relation_size('event_external_ids')::float8 AS keys
    `);
    const perMillion = (bytes: number) => ((bytes / shape.events) * 1e6) / 2 ** 30;
    out(
      `disk per million events    ${perMillion(sizes.events + sizes.search + sizes.keys).toFixed(2)} GiB ` +
        `(events ${perMillion(sizes.events).toFixed(2)}, search ${perMillion(sizes.search).toFixed(2)}, ` +
        `external-id keys ${perMillion(sizes.keys).toFixed(2)})`,
    );

    if (!args['skip-retention']) await measureRetention(pool, shape);
  } finally {
    await pool.end();
    await database.close();
  }
}

await main();
