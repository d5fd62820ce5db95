/**
 * Starts the one PostgreSQL server the whole test run shares: DATABASE_URL when set (CI points it
 * at a real server), otherwise an embedded cluster in a temp directory on a free port. Each test
 * file then creates its own database on it (test/support/database.ts), a migrated one as a copy of
 * the run's template (migrated-template.ts).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createLogger } from '../../src/log/logger.ts';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres.ts';
import { startDroppingClosed } from './migrated-template.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A server URL whose user may CREATE DATABASE. */
    databaseUrl: string;
    /** How the names of this run's test databases start; they are dropped when the run ends. */
    testDatabasePrefix: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.DATABASE_URL?.trim();
  const prefix = `sb_test_${randomBytes(4).toString('hex')}_`;
  if (external) {
    project.provide('databaseUrl', external);
    project.provide('testDatabasePrefix', prefix);
    const dropper = startDroppingClosed(external, prefix);
    return () => dropper.finish();
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-test-pg-'));
  // mkdtemp makes the directory private; as root the server runs as `postgres` and must enter it.
  await chmod(dataDir, 0o755);
  const server = await startEmbeddedPostgres({
    dataDir,
    logger: createLogger({ level: process.env.LOG_LEVEL ?? 'error' }),
    database: 'postgres',
    // Durability is pointless for a cluster deleted at the end of the run, and costs seconds.
    durable: false,
  });
  project.provide('databaseUrl', server.url);
  project.provide('testDatabasePrefix', prefix);
  // The cluster goes with its databases: none is dropped first.
  return async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
