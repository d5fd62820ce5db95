/**
 * Time partitions at scale (docs/adr/time-partitions.md): N events of about 2 KiB spread evenly
 * over D days (one partition per UTC day), all indexed for search, then
 * - list_webhook_events p50: the first page, and a page 100,000 events deep (by cursor);
 * - search p50/p99 for a rare word, a common word, an OR, a prefix and a phrase;
 * - an id lookup (store.get) p50;
 * - retention of the oldest day's partition (one run of the job);
 * - disk per million events (events, search rows, indexes, external-id keys).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/scale.ts --events 200000 --days 30
 *
 * Without DATABASE_URL an embedded PostgreSQL runs in a temporary directory. The database is
 * dropped at the end.
 */
import { parseArgs } from 'node:util';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database.ts';
import type { ListQuery } from '../src/store/event-store.ts';
import { migrate } from '../src/store/migrate.ts';
import { ensurePartitions } from '../src/store/partitions.ts';
import { createEventStore } from '../src/store/pg-event-store.ts';
import { startRetention } from '../src/store/retention.ts';
import { openBenchDatabase } from './bench-database.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    days: { type: 'string', default: '30' },
    iterations: { type: 'string', default: '60' },
  },
});
const EVENTS = Number(args.events);
const DAYS = Number(args.days);
const ITERATIONS = Number(args.iterations);
const DEEP = Math.min(100_000, EVENTS - 100);

const logger = createLogger({ level: 'warn' });
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

const percentile = (samples: number[], p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

async function time(fn: () => Promise<unknown>, iterations = ITERATIONS): Promise<{ p50: number; p99: number }> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const started = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** Events over the last DAYS days, ~2 KiB each, UUIDv7 ids from their time, in chunks. */
async function seed(pool: DatabasePool): Promise<void> {
  const chunk = 5_000;
  const spanMs = DAYS * 86_400_000;
  for (let start = 1; start <= EVENTS; start += chunk) {
    const end = Math.min(EVENTS, start + chunk - 1);
    await pool.query(sql.unsafe`
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
      FROM generate_series(${start}::bigint, ${end}::bigint) AS g,
        LATERAL (SELECT now() - make_interval(secs => ${spanMs / 1000}) + g * make_interval(secs => ${spanMs / 1000 / EVENTS})) AS at(t)
    `);
    await pool.query(sql.unsafe`
      WITH taken AS (DELETE FROM event_search_queue RETURNING event_id)
      INSERT INTO event_search (event_id, event_received_at, payload_json, payload_tsv)
      SELECT events.id, events.received_at, switchboard_payload_jsonb(events.payload),
        switchboard_payload_tsvector(events.payload)
      FROM taken JOIN events ON events.id = taken.event_id
    `);
    process.stderr.write(`seeded ${end}/${EVENTS}\n`);
  }
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
}

async function main(): Promise<void> {
  const database = await openBenchDatabase(logger, 'sb_scale');
  const pool = await createDatabasePool(database.url, { maximumPoolSize: 4 });
  try {
    await migrate(pool, logger);
    for (let day = DAYS + 1; day >= 0; day -= 1) {
      await ensurePartitions(pool, 'day', new Date(Date.now() - day * 86_400_000).toISOString());
    }
    const seedStarted = Date.now();
    await seed(pool);
    const partitions = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM event_partitions
    `);
    out(`# bench/scale.ts: ${EVENTS} events over ${DAYS} days, ${partitions} day partitions (${database.where})`);
    out(`seeded and indexed in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s`);

    const store = createEventStore(pool);
    const first = await time(() => store.list({ limit: 50 }));
    // A cursor 100,000 events deep: the position of that event, as the store would hand it out.
    let deepCursor: string | undefined;
    {
      let query: ListQuery = { limit: 200 };
      for (let seen = 0; seen < DEEP; seen += 200) {
        const page = await store.list(query);
        deepCursor = page.next_cursor;
        if (!deepCursor) break;
        query = { limit: 200, cursor: deepCursor };
      }
    }
    const deepQuery: ListQuery = deepCursor === undefined ? { limit: 50 } : { limit: 50, cursor: deepCursor };
    const deep = await time(() => store.list(deepQuery));
    out(`list first page            p50 ${first.p50.toFixed(2)} ms  p99 ${first.p99.toFixed(2)} ms`);
    out(`list page ${DEEP} deep      p50 ${deep.p50.toFixed(2)} ms  p99 ${deep.p99.toFixed(2)} ms`);

    const searches: Array<[string, ListQuery]> = [
      ['rare', { q: 'w12345' }],
      ['common', { q: 'opened' }],
      ['OR', { q: 'w12345 or w23456' }],
      ['match', { match: { sender: { login: 'user7' } } }],
      ['phrase', { q: '"action opened"' }],
    ];
    for (const [label, query] of searches) {
      const result = await time(() => store.list({ ...query, limit: 50 }));
      out(`search ${label.padEnd(8)}            p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`);
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
        pg_total_relation_size('event_external_ids')::float8 AS keys
    `);
    const perMillion = (bytes: number) => ((bytes / EVENTS) * 1e6) / 2 ** 30;
    out(
      `disk per million events    ${perMillion(sizes.events + sizes.search + sizes.keys).toFixed(2)} GiB ` +
        `(events ${perMillion(sizes.events).toFixed(2)}, search ${perMillion(sizes.search).toFixed(2)}, ` +
        `external-id keys ${perMillion(sizes.keys).toFixed(2)})`,
    );

    // Retention: max_age so that exactly the oldest full day partition is past it.
    const oldestRows = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM events
      WHERE received_at >= (SELECT min(lower_bound) FROM event_partitions WHERE lower_bound > now() - ${`${DAYS} days`}::interval)
        AND received_at < (SELECT min(upper_bound) FROM event_partitions WHERE lower_bound > now() - ${`${DAYS} days`}::interval)
    `);
    const retention = startRetention({
      pool,
      config: { max_age: `${DAYS - 1}d`, interval_seconds: 3600 },
      logger,
      initialDelayMs: 3_600_000,
      batchSize: 1000,
    });
    const started = process.hrtime.bigint();
    const pruned = await retention.runOnce();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    await retention.stop();
    out(
      `retention run              ${ms.toFixed(0)} ms: ${pruned.droppedPartitions ?? 0} partition(s) dropped ` +
        `(a day holds ~${oldestRows} events), ${pruned.deletedByAge} rows deleted by row`,
    );
  } finally {
    await pool.end();
    await database.close();
  }
}

await main();
