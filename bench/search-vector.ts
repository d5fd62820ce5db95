/**
 * What a payload's search vector costs PostgreSQL, and what cheaper ways of building one give up
 * (issue 40, "search that costs less per event"; docs/adr/search-vector-cost.md).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/search-vector.ts
 *   … --events 2000 --rounds 3
 *
 * Two sets of payloads, each in a fresh database with the store's migrations: the ingest benches'
 * 2 KiB GitHub delivery, and the catalog's provider samples (catalog/<name>/, as generated/samples.ts holds them) in turn. Each
 * variant is one statement over all the payloads; its cost is the backend's CPU from /proc (so load
 * elsewhere counts only through the cores' caches), per payload, in rotated rounds, with the ratio
 * to the store's own function measured in the same round. "same" counts the payloads whose vector
 * equals the store's: only a variant at every payload keeps what `q` finds.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SAMPLE_TEXTS } from '../generated/samples.ts';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { openBenchDatabase } from './bench-database.ts';
import { cpuTicks, processCpuSeconds, stealShare } from './cpu-ticks.ts';
import { githubPayload } from './github-payload.ts';

/**
 * Each variant is an expression over `payload` (bytea), `vector_text` (the store's vector as text) or
 * `naive_text` (naiveVectorText's). `vector: false` marks one that is not a tsvector (no lexemes).
 */
const VARIANTS: ReadonlyArray<{ name: string; keeps: string; sql: string; vector?: false }> = [
  { name: 'store', keeps: 'the store: every word of the text', sql: 'switchboard_payload_tsvector(payload)' },
  {
    name: 'no-plpgsql',
    keeps: 'the same, without the function',
    sql: `to_tsvector('simple', left(convert_from(payload, 'UTF8'), 100000))`,
  },
  {
    name: 'string-leaves',
    keeps: 'string values only: no keys, numbers, booleans',
    sql: `jsonb_to_tsvector('simple', switchboard_payload_jsonb(payload), '["string"]')`,
  },
  {
    name: 'all-leaves',
    keeps: 'keys and values, in jsonb order',
    sql: `jsonb_to_tsvector('simple', switchboard_payload_jsonb(payload), '["all"]')`,
  },
  {
    name: 'capped-leaves',
    keeps: 'string values, each cut to 256 characters, 4 KiB in all',
    sql: `to_tsvector('simple', left((SELECT string_agg(left(leaf #>> '{}', 256), ' ')
      FROM jsonb_path_query(switchboard_payload_jsonb(payload), 'strict $.**') AS leaf
      WHERE jsonb_typeof(leaf) = 'string'), 4096))`,
  },
  {
    name: 'vector-input',
    keeps: 'the store vector, sent as text (built outside PostgreSQL)',
    sql: 'vector_text::tsvector',
  },
  {
    name: 'node-naive',
    keeps: 'a naive vector built in Node, sent as text',
    sql: 'naive_text::tsvector',
  },
  { name: 'jsonb', keeps: '(the jsonb copy, for scale)', sql: 'switchboard_payload_jsonb(payload)', vector: false },
];

interface Measured {
  us: number[];
  ratios: number[];
  same: number;
  lexemes: number;
}

/** Each distinct JSON sample of the catalog once (the generic presets share one), compacted. */
function catalogPayloads(): Buffer[] {
  const texts = Object.values(SAMPLE_TEXTS).flatMap((files) =>
    Object.entries(files ?? {})
      .filter(([file]) => file.endsWith('.json'))
      .map(([, text]) => text),
  );
  return [...new Set(texts)].map((text) => Buffer.from(JSON.stringify(JSON.parse(text))));
}

/**
 * A naive vector built in Node (runs of letters and digits, lowercased, with their positions), as
 * tsvector text. Not PostgreSQL's parser (no URLs, hosts, emails, versions or hyphenated words):
 * it bounds from below what building the vector in the server would cost the server's CPU.
 */
function naiveVectorText(text: string): string {
  const positions = new Map<string, number[]>();
  let position = 0;
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (word === '') continue;
    position += 1;
    const seen = positions.get(word);
    if (seen) seen.push(position);
    else positions.set(word, [position]);
  }
  return [...positions].map(([word, at]) => `'${word.replaceAll("'", "''")}':${at.slice(0, 256).join(',')}`).join(' ');
}

/** This process's CPU per payload for naiveVectorText, µs. */
function nodeMicrosPerPayload(payloads: readonly Buffer[], events: number): number {
  const texts = payloads.map((p) => p.toString('utf8'));
  const before = process.cpuUsage();
  let length = 0;
  for (let i = 0; i < events; i += 1) length += naiveVectorText(texts[i % texts.length] ?? '').length;
  const used = process.cpuUsage(before);
  if (length === 0) throw new Error('no payload text');
  return (used.user + used.system) / events;
}

async function loadPayloads(client: pg.Client, payloads: readonly Buffer[], events: number): Promise<void> {
  await client.query(
    'CREATE UNLOGGED TABLE bench_payloads (n int PRIMARY KEY, payload bytea, vector_text text, naive_text text)',
  );
  const cycled = Array.from({ length: events }, (_, i) => payloads[i % payloads.length] as Buffer);
  await client.query(
    `INSERT INTO bench_payloads (n, payload, vector_text, naive_text)
     SELECT n, payload, switchboard_payload_tsvector(payload)::text, naive
     FROM unnest($1::bytea[], $2::text[]) WITH ORDINALITY AS p(payload, naive, n)`,
    [cycled, cycled.map((payload) => naiveVectorText(payload.toString('utf8')))],
  );
  await client.query('VACUUM ANALYZE bench_payloads');
}

/** One variant over every payload: backend CPU per payload (µs), payloads equal to the store's, lexemes. */
async function runVariant(
  client: pg.Client,
  pid: number,
  variant: (typeof VARIANTS)[number],
  events: number,
): Promise<{ us: number; same: number; lexemes: number }> {
  const before = processCpuSeconds(pid);
  const vector = variant.vector !== false;
  const { rows } = await client.query<{ same: string; lexemes: string }>(
    `SELECT count(*) FILTER (WHERE ${vector ? 'v::text IS NOT DISTINCT FROM vector_text' : 'false'}) AS same,
       ${vector ? 'coalesce(sum(length(v)), 0)' : 'count(v)'} AS lexemes
     FROM (SELECT (${variant.sql}) AS v, vector_text FROM bench_payloads) AS computed`,
  );
  const us = ((processCpuSeconds(pid) - before) * 1e6) / events;
  return { us, same: Number(rows[0]?.same), lexemes: Number(rows[0]?.lexemes) / events };
}

async function measureSet(label: string, payloads: readonly Buffer[], events: number, rounds: number): Promise<void> {
  const logger = createLogger({ level: 'warn' });
  const database = await openBenchDatabase(logger, 'sb_vector');
  const pool = await createDatabasePool(database.url, { maximumPoolSize: 1 });
  const client = new pg.Client({ connectionString: database.url });
  try {
    await migrate(pool, logger);
    await client.connect();
    await loadPayloads(client, payloads, events);
    const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
    const bytes = payloads.reduce((sum, p) => sum + p.length, 0) / payloads.length;
    process.stdout.write(`\n${label}: ${events} payloads, ${bytes.toFixed(0)} bytes on average\n`);
    const node = [1, 2, 3].map(() => nodeMicrosPerPayload(payloads, Math.max(events, 20_000)));
    process.stdout.write(
      `  a naive vector built in Node (not PostgreSQL's parser): ${node.map((us) => us.toFixed(1)).join(' / ')} µs of this process per payload\n`,
    );
    const results = new Map<string, Measured>();
    for (let round = 0; round < rounds; round += 1) {
      const ticks = cpuTicks();
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const roundUs = new Map<string, number>();
      for (const variant of order) {
        const { us, same, lexemes } = await runVariant(client, pid, variant, events);
        roundUs.set(variant.name, us);
        const entry = results.get(variant.name) ?? { us: [], ratios: [], same, lexemes };
        entry.us.push(us);
        results.set(variant.name, entry);
      }
      for (const [name, us] of roundUs) results.get(name)?.ratios.push(us / (roundUs.get('store') ?? Number.NaN));
      const steal = stealShare(ticks, cpuTicks());
      process.stdout.write(
        `  round ${round + 1}: steal ${steal === undefined ? '–' : `${(steal * 100).toFixed(1)} %`}\n`,
      );
    }
    process.stdout.write(`  ${'variant'.padEnd(14)} ${'µs/payload'.padStart(18)}  ×store  lexemes  same   keeps\n`);
    for (const variant of VARIANTS) {
      const m = results.get(variant.name);
      if (!m) continue;
      const ratio = [...m.ratios].sort((a, b) => a - b)[Math.floor(m.ratios.length / 2)] ?? Number.NaN;
      process.stdout.write(
        `  ${variant.name.padEnd(14)} ${m.us
          .map((us) => us.toFixed(0).padStart(5))
          .join(' ')
          .padStart(18)}  ` +
          `${ratio.toFixed(2).padStart(5)}  ${(variant.vector === false ? '–' : m.lexemes.toFixed(0)).padStart(7)}  ${(variant.vector === false ? '–' : String(m.same)).padStart(5)}   ${variant.keeps}\n`,
      );
    }
  } finally {
    await client.end().catch(() => undefined);
    await pool.end();
    await database.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { events: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' } },
  });
  const events = Math.max(100, Number(values.events));
  const rounds = Math.max(1, Number(values.rounds));
  process.stdout.write('PostgreSQL backend CPU per payload (from /proc; one 10 ms tick is 10,000 µs / events)\n');
  await measureSet('2 KiB GitHub delivery (the ingest benches)', [await githubPayload()], events, rounds);
  await measureSet('catalog samples (catalog/<name>/), in turn', catalogPayloads(), events, rounds);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
