/**
 * The downtime of upgrading a database made before time partitions: a database migrated through
 * 0010 (the last unpartitioned schema) is filled with N events of about 2 KiB over D days, every
 * one indexed for search, half with a provider delivery id and a third with two forward
 * deliveries (one delivered, with its attempt; one pending), then `migrate()` runs 0011 (the
 * batched move) and what follows, as a start does.
 *
 * Baseline, in the same round on the same rows: copying them once with plain INSERT … SELECT
 * into unpartitioned tables of the same shape, the least any in-place move has to do. Rounds
 * rotate which of the two goes first, so neither always gets the warmer cache.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/partition-upgrade.ts --events 200000 --days 7 --rounds 3
 *
 * Without DATABASE_URL it runs on an embedded PostgreSQL in a temporary directory.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { UPGRADE_BATCH_EVENTS } from '../src/store/partitions/partition-upgrade.ts';
import {
  addDeliveries,
  migrationsThrough,
  UNPARTITIONED_VERSION,
  UUID_V7_OF_G_AT_T,
} from '../test/support/unpartitioned-schema.ts';
import { openBenchDatabase } from './bench-database.ts';
import { cpuTicks, stealShare } from './cpu-ticks.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    days: { type: 'string', default: '7' },
    rounds: { type: 'string', default: '3' },
  },
});
const EVENTS = Number(args.events);
const DAYS = Number(args.days);
const ROUNDS = Number(args.rounds);

const logger = createLogger({ level: 'warn' });
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

/** EVENTS events spread over the last DAYS days, as 0010's schema stores them, all indexed. */
async function populate(pool: DatabasePool): Promise<void> {
  const spacingMs = (DAYS * 86_400_000) / EVENTS;
  await pool.query(sql.unsafe`
    INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, external_id, content_type,
      headers, payload, received_at, summary)
    SELECT ${UUID_V7_OF_G_AT_T}, 'provider-' || (g % 10), 'issues.opened', 'signed', true, 'signature valid',
      CASE WHEN g % 2 = 0 THEN 'delivery-' || g END, 'application/json',
      '{"x-github-event": "issues", "content-type": "application/json"}'::jsonb,
      convert_to(format('{"n":%s,"action":"opened","issue":{"title":"issue %s","body":"%s"},"word":"w%s"}',
        g, g, repeat(md5(g::text), 58), g % 1000), 'UTF8'),
      t, 'issue ' || g
    FROM generate_series(1, ${EVENTS}) AS g,
      LATERAL (SELECT now() - ${DAYS} * interval '1 day' + g * ${spacingMs} * interval '1 millisecond') AS at(t)
  `);
  await pool.query(sql.unsafe`
    INSERT INTO event_search (event_id, payload_json, payload_tsv)
    SELECT id, switchboard_payload_jsonb(payload), switchboard_payload_tsvector(payload) FROM events
  `);
  await pool.query(sql.unsafe`DELETE FROM event_search_queue`);
  await addDeliveries(pool);
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
}

/** The baseline: every row copied once into plain tables of the same shape, in one transaction. */
async function plainCopy(pool: DatabasePool): Promise<number> {
  const started = process.hrtime.bigint();
  await pool.transaction(async (tx) => {
    for (const table of ['events', 'event_search', 'deliveries', 'delivery_attempts']) {
      const copy = sql.identifier([`${table}_copy`]);
      await tx.query(
        sql.unsafe`CREATE TABLE ${copy} (LIKE ${sql.identifier([table])} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)`,
      );
      await tx.query(sql.unsafe`INSERT INTO ${copy} SELECT * FROM ${sql.identifier([table])}`);
    }
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  for (const table of ['events', 'event_search', 'deliveries', 'delivery_attempts']) {
    await pool.query(sql.unsafe`DROP TABLE ${sql.identifier([`${table}_copy`])}`);
  }
  return seconds;
}

async function upgrade(pool: DatabasePool): Promise<number> {
  const started = process.hrtime.bigint();
  await migrate(pool, logger, { partition: 'day' });
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const countRow = z.object({ n: z.number() });

async function main(): Promise<void> {
  out(
    `partition upgrade: ${EVENTS.toLocaleString('en')} events over ${DAYS} days, ${ROUNDS} rounds, ` +
      `batches of ${UPGRADE_BATCH_EVENTS.toLocaleString('en')} events`,
  );
  const old = await migrationsThrough(UNPARTITIONED_VERSION);
  const ticks = cpuTicks();
  const results: Array<{ upgrade: number; copy: number }> = [];
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      const database = await openBenchDatabase(logger, 'sb_upgrade');
      const pool = await createDatabasePool(database.url, { maximumPoolSize: 2, statementTimeoutMs: 3_600_000 });
      try {
        await migrate(pool, logger, { directory: old.directory });
        const seeded = process.hrtime.bigint();
        await populate(pool);
        const size = await pool.oneFirst(
          sql.type(z.object({ size: z.string() }))`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`,
        );
        out(
          `round ${round}: seeded in ${(Number(process.hrtime.bigint() - seeded) / 1e9).toFixed(1)} s (${size}); ` +
            `load average ${loadavg()[0]?.toFixed(1) ?? '?'}`,
        );
        // Rotated: odd rounds copy first, even rounds upgrade first (the copy then reads the new tables).
        let copy: number;
        let moved: number;
        if (round % 2 === 1) {
          copy = await plainCopy(pool);
          moved = await upgrade(pool);
        } else {
          moved = await upgrade(pool);
          copy = await plainCopy(pool);
        }
        const events = await pool.oneFirst(sql.type(countRow)`SELECT count(*)::int AS n FROM events`);
        if (events !== EVENTS) throw new Error(`round ${round}: ${events} events after the upgrade, not ${EVENTS}`);
        results.push({ upgrade: moved, copy });
        out(
          `  upgrade ${moved.toFixed(1)} s (${Math.round(EVENTS / moved).toLocaleString('en')} events/s), ` +
            `plain copy ${copy.toFixed(1)} s: ${(moved / copy).toFixed(2)}× the copy`,
        );
      } finally {
        await pool.end();
        await database.close();
      }
    }
  } finally {
    await old.remove();
  }
  const steal = stealShare(ticks, cpuTicks());
  const rates = results.map((r) => EVENTS / r.upgrade).sort((a, b) => a - b);
  const ratios = results.map((r) => r.upgrade / r.copy).sort((a, b) => a - b);
  out();
  out(
    `upgrade rate ${Math.round(rates[0] ?? 0).toLocaleString('en')}–${Math.round(rates.at(-1) ?? 0).toLocaleString('en')} ` +
      `events/s; ${(ratios[0] ?? 0).toFixed(2)}–${(ratios.at(-1) ?? 0).toFixed(2)}× a plain copy of the same rows`,
  );
  const slowest = rates[0] ?? 1;
  for (const millions of [1, 10]) {
    out(
      `  downtime at ${millions}M events, at the slowest round's rate: ${((millions * 1e6) / slowest / 60).toFixed(1)} min`,
    );
  }
  if (steal !== undefined) out(`CPU time stolen by the hypervisor during the run: ${(steal * 100).toFixed(1)} %`);
  out(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

await main();
