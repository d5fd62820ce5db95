/**
 * A throwaway database for a benchmark: a new database on DATABASE_URL's server (dropped after),
 * or, when DATABASE_URL is unset, an embedded PostgreSQL in a temporary directory (removed after).
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../src/log/logger.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/postgres/embedded-postgres.ts';

export interface BenchDatabase {
  url: string;
  /** Where it runs, for the report: the server's address, or "embedded". */
  where: string;
  close(): Promise<void>;
}

export async function openBenchDatabase(logger: Logger, prefix = 'sb_bench'): Promise<BenchDatabase> {
  const base = process.env.DATABASE_URL?.trim();
  if (base) {
    const name = `${prefix}_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(base);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      where: `${url.hostname}:${url.port || 5432}`,
      close: async () => {
        const again = new pg.Client({ connectionString: base });
        await again.connect();
        await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await again.end();
      },
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-'));
  // mkdtemp makes the directory private; run as root, the server runs as `postgres` and must enter it.
  await chmod(dataDir, 0o755);
  const server: EmbeddedPostgres = await startEmbeddedPostgres({
    dataDir,
    logger,
    settings: ['fsync=off', 'synchronous_commit=off'],
  });
  return {
    url: server.url,
    where: 'embedded',
    close: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The database to measure for a bench that can keep its data: a new one (openBenchDatabase), kept
 * after the run with `keep` (its name printed on stderr), or with `reuse` one a kept run left,
 * measured again without loading (never dropped here). Both need DATABASE_URL.
 */
export async function openKeptBenchDatabase(
  logger: Logger,
  prefix: string,
  options: { keep: boolean; reuse: string | undefined },
): Promise<BenchDatabase> {
  const base = process.env.DATABASE_URL?.trim();
  if ((options.keep || options.reuse) && !base) throw new Error('--keep and --reuse need DATABASE_URL');
  if (options.reuse && base) {
    const url = new URL(base);
    url.pathname = `/${options.reuse}`;
    return {
      url: url.toString(),
      where: `${url.hostname}:${url.port || 5432}, reused ${options.reuse}`,
      close: async () => {},
    };
  }
  const database = await openBenchDatabase(logger, prefix);
  if (!options.keep) return database;
  process.stderr.write(`keeping ${new URL(database.url).pathname.slice(1)}\n`);
  return { ...database, close: async () => {} };
}
