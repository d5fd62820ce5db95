/**
 * Search benchmark for GET /api/events: q (full text), match (jsonb containment), from/to and
 * verified, on a seeded table. For each query it prints the latency of the store call the API
 * makes (p50/p95 over repeated runs) and the index the plan uses, from EXPLAIN ANALYZE of the
 * exact SQL the store builds.
 *
 *   npx tsx bench/api-search.ts                 # 100,000 events
 *   BENCH_EVENTS=20000 npx tsx bench/api-search.ts
 *
 * Uses a throwaway database on DATABASE_URL's server (created and dropped), or an embedded
 * PostgreSQL in a temp directory when DATABASE_URL is unset. Exits non-zero when a selective
 * search does not use its GIN index (from 20,000 events up; below that a sequential scan is the
 * planner's honest choice).
 */
import pg from 'pg';
import { openBenchDatabase } from './bench-database.ts';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { createEventStore } from '../src/store/events/pg-event-store.ts';
import { indexQueuedEvents } from '../src/store/events/search-indexer.ts';
import { migrate } from '../src/store/database/migrate.ts';
import type { ListQuery, NewEvent } from '../src/store/events/event-store.ts';
import { buildListSql, resolveListQuery } from '../src/store/events/list-statement.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const BATCH = 1000;
const MIN_EVENTS_FOR_INDEX_CHECK = 20_000;
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
const out = (line: string): void => void process.stdout.write(`${line}\n`);

const WORDS =
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(
    ' ',
  );
const ACTIONS = ['opened', 'closed', 'edited', 'labeled', 'synchronize', 'reopened'];
const PROVIDERS = [
  { provider: 'github', trustMode: 'signed', verified: true },
  { provider: 'stripe', trustMode: 'signed', verified: true },
  { provider: 'rejected', trustMode: 'signed', verified: false },
  { provider: 'ci', trustMode: 'token', verified: false },
  { provider: 'orders', trustMode: 'queue', verified: false },
] as const;

// Deterministic, so runs compare.
let seed = 42;
const rand = (): number => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;

function makeEvent(i: number): NewEvent {
  const kind = PROVIDERS[i % PROVIDERS.length] ?? PROVIDERS[0];
  const words = Array.from({ length: 12 }, () => pick(WORDS));
  // One event in 1000 carries a rare word and a rare customer: the selective searches.
  if (i % 1000 === 7) words.push('needle');
  const payload = {
    action: pick(ACTIONS),
    number: i,
    repository: { name: `repo-${i % 500}`, private: i % 3 === 0 },
    customer: { id: i % 1000 === 7 ? 'cus_rare' : `cus_${i % 2000}` },
    text: words.join(' '),
  };
  return {
    provider: kind.provider,
    eventType: `${pick(['issues', 'pull_request', 'payment_intent'])}.${pick(ACTIONS)}`,
    trustMode: kind.trustMode,
    verified: kind.verified,
    verifyDetail: kind.verified ? 'hmac-sha256 valid' : 'no verification',
    externalId: null,
    contentType: 'application/json',
    sourceIp: '127.0.0.1',
    headers: { 'content-type': 'application/json' },
    payload: Buffer.from(JSON.stringify(payload)),
  };
}

interface Case {
  name: string;
  query: ListQuery;
  /** The index a good plan uses; the run fails when a selective case misses it. */
  expectIndex?: string;
}

const recent = new Date(Date.now() - 60_000).toISOString();
const CASES: Case[] = [
  { name: 'q rare word', query: { q: 'needle' }, expectIndex: 'event_search_tsv_idx' },
  { name: 'q two rare-ish words', query: { q: 'needle alpha' }, expectIndex: 'event_search_tsv_idx' },
  { name: 'q common word', query: { q: 'alpha' } },
  {
    name: 'match rare customer',
    query: { match: { customer: { id: 'cus_rare' } } },
    expectIndex: 'event_search_json_idx',
  },
  {
    name: 'match nested repo',
    query: { match: { repository: { name: 'repo-17' } } },
    expectIndex: 'event_search_json_idx',
  },
  { name: 'match common action', query: { match: { action: 'opened' } } },
  { name: 'q + provider', query: { q: 'needle', provider: 'rejected' }, expectIndex: 'event_search_tsv_idx' },
  { name: 'verified=false', query: { verified: false } },
  { name: 'from/to last minute', query: { from: recent, to: new Date(Date.now() + 3_600_000).toISOString() } },
  { name: 'plain first page', query: {} },
];

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0;
}

async function main(): Promise<number> {
  const database = await openBenchDatabase(logger);
  const pool = await createDatabasePool(database.url, { maximumPoolSize: 4 });
  const explainClient = new pg.Client({ connectionString: database.url });
  let failures = 0;
  try {
    await migrate(pool, logger);
    const store = createEventStore(pool);
    const started = performance.now();
    for (let i = 0; i < TOTAL; i += BATCH) {
      await store.insertMany(Array.from({ length: Math.min(BATCH, TOTAL - i) }, (_, k) => makeEvent(i + k)));
    }
    out(`seeded ${TOTAL} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    // What the background indexer does in production, all at once here, so the GIN indexes are
    // measured (a search over events still queued would compute their vectors on the fly).
    const indexing = performance.now();
    let indexed = 0;
    for (;;) {
      const taken = await indexQueuedEvents(pool, 2000);
      if (taken === 0) break;
      indexed += taken;
    }
    out(`indexed ${indexed} events for search in ${((performance.now() - indexing) / 1000).toFixed(1)} s`);
    await explainClient.connect();
    await explainClient.query('ANALYZE events');
    await explainClient.query('ANALYZE event_search');

    out('');
    out(`${'query'.padEnd(24)} ${'rows'.padStart(5)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)}  plan`);
    for (const c of CASES) {
      const timings: number[] = [];
      let rows = 0;
      for (let r = 0; r < RUNS; r++) {
        const t = performance.now();
        rows = (await store.list(c.query)).events.length;
        timings.push(performance.now() - t);
      }
      timings.sort((a, b) => a - b);
      const token = buildListSql(resolveListQuery(c.query));
      // slonik numbers its placeholders $slonik_N; plain pg wants $N.
      const text = token.sql.replace(/\$slonik_(\d+)/g, '$$$1');
      const plan = await explainClient.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, [
        ...token.values,
      ] as unknown[]);
      const lines = plan.rows.map((row) => row['QUERY PLAN']);
      const scans = lines
        .map((l) =>
          /(Bitmap Index Scan|Index Scan Backward|Index Scan|Index Only Scan|Seq Scan) (?:on|using) (\w+)/.exec(l),
        )
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => `${m[1]} ${m[2]}`);
      const ok = c.expectIndex === undefined || scans.some((s) => s.endsWith(c.expectIndex ?? ''));
      if (!ok) failures++;
      out(
        `${c.name.padEnd(24)} ${String(rows).padStart(5)} ${percentile(timings, 0.5).toFixed(2).padStart(8)} ${percentile(timings, 0.95).toFixed(2).padStart(8)}  ${scans.join(' + ')}${ok ? '' : `  <-- expected ${c.expectIndex}`}`,
      );
      if (process.env.BENCH_VERBOSE) for (const l of lines) out(`    ${l}`);
    }
  } finally {
    await explainClient.end().catch(() => undefined);
    await pool.end();
    await database.close();
  }
  out('');
  if (failures === 0) {
    out('all selective searches use their GIN index');
    return 0;
  }
  out(`${failures} selective search(es) did not use the GIN index`);
  // On a small table a sequential scan is honestly cheaper, so only a realistic size can fail the run.
  if (TOTAL < MIN_EVENTS_FOR_INDEX_CHECK) {
    out(
      `(expected below ${MIN_EVENTS_FOR_INDEX_CHECK} events: the planner rightly prefers a sequential scan of a small table)`,
    );
    return 0;
  }
  return 1;
}

process.exitCode = await main();
