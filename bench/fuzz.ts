/**
 * The long hostile-input run: every surface of test/fuzz/ with 10,000 cases (or --runs), against
 * a switchboard CHILD PROCESS, so a crash or an unhandled rejection ends the process and shows.
 * Loopback only; every request is bounded by a timeout and the run by its case counts.
 *
 *   npx tsx bench/fuzz.ts [--runs 10000] [--seed 1] [--surface NAME]...
 *
 * DATABASE_URL is used when set (a fresh database is created there and dropped after); otherwise
 * a temporary embedded PostgreSQL is started for the run. Exits 1 on the first broken rule
 * (printed with fast-check's seed and path to replay it) or if the server stops answering.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { inspect } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createPool, sql } from 'slonik';
import { createLogger } from '../src/log/logger.ts';
import { createDatabasePool } from '../src/store/database/database.ts';
import { startEmbeddedPostgres } from '../src/postgres/embedded-postgres.ts';
import { migrate } from '../src/store/database/migrate.ts';
import { formatReport, runSurface, type SurfaceReport } from '../test/fuzz/support/run-surface.ts';
import { apiQuerySurface } from '../test/fuzz/support/api-query-surface.ts';
import { configSurface } from '../test/fuzz/support/config-surface.ts';
import { headersSurface } from '../test/fuzz/support/headers-surface.ts';
import { jsonRpcSurface } from '../test/fuzz/support/jsonrpc-surface.ts';
import type { Surface } from '../test/fuzz/support/surface.ts';
import { toolsSurface } from '../test/fuzz/support/tools-surface.ts';
import { webhookSurface } from '../test/fuzz/support/webhook-surface.ts';
import { childTarget, fuzzConfig, type FuzzTarget } from '../test/fuzz/support/target.ts';
import { spawnSwitchboard } from '../test/support/spawn-switchboard.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '1' },
    surface: { type: 'string', multiple: true },
  },
});
const runs = Number(values.runs);
const seed = Number(values.seed);
const all = [
  configSurface,
  jsonRpcSurface,
  toolsSurface,
  apiQuerySurface,
  headersSurface,
  webhookSurface,
] as unknown as Array<Surface<never>>;
const chosen = values.surface === undefined ? all : all.filter((s) => values.surface?.includes(s.name));

async function database(): Promise<{ url: string; close(): Promise<void> }> {
  const external = process.env.DATABASE_URL?.trim();
  if (external) {
    const name = `sb_fuzz_${randomBytes(5).toString('hex')}`;
    const admin = await createPool(external, { maximumPoolSize: 1 });
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.end();
    const url = new URL(external);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      close: async () => {
        const cleanup = await createPool(external, { maximumPoolSize: 1 });
        await cleanup.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
        await cleanup.end();
      },
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-fuzz-pg-'));
  const server = await startEmbeddedPostgres({
    dataDir,
    logger: createLogger({ level: 'warn' }),
    database: 'fuzz',
    durable: false,
  });
  return {
    url: server.url,
    close: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<number> {
  const db = await database();
  const pool = await createDatabasePool(db.url, { maximumPoolSize: 2 });
  await migrate(pool, createLogger({ level: 'warn' }));
  const child = await spawnSwitchboard({
    config: fuzzConfig(),
    databaseUrl: db.url,
    logLevel: 'warn',
    startTimeoutMs: 120_000,
  });
  const target: FuzzTarget = await childTarget(child, pool);
  process.stdout.write(`fuzz: ${runs} cases per surface, seed ${seed}, switchboard pid ${child.pid} at ${child.url}\n`);
  const reports: SurfaceReport[] = [];
  let failure: unknown;
  try {
    for (const surface of chosen) {
      const report = await runSurface(surface, target, {
        numRuns: runs,
        seed,
        skipLiveness: surface.name === 'config',
      });
      reports.push(report);
      process.stdout.write(`${formatReport(report)}\n`);
    }
  } catch (err) {
    failure = err;
  }
  const rss = child.rss();
  const faults = target.faults();
  await target.close();
  const exit = await child.stop();
  child.cleanup();
  await pool.end();
  await db.close();
  const total = reports.reduce((n, r) => n + r.cases, 0);
  process.stdout.write(
    `\nfuzz: ${total} cases over ${reports.length} surfaces; server RSS at the end ${(rss / 1048576).toFixed(1)} MiB; exit code ${exit.code}\n`,
  );
  if (failure !== undefined || faults.length > 0 || exit.code !== 0) {
    const cause =
      failure instanceof Error && failure.cause instanceof Error ? `\ncaused by: ${failure.cause.message}` : '';
    process.stdout.write(
      `FAIL\n${failure instanceof Error ? failure.message : inspect(failure)}${cause}\n${faults.join('\n')}\n`,
    );
    return 1;
  }
  process.stdout.write(
    'PASS: no 5xx besides the documented 503, no internal, no crash, no unhandled rejection, no stored change from rejected input\n',
  );
  return 0;
}

process.exitCode = await main();
