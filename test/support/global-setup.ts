/**
 * Gives the run a TMPDIR of its own, checked to be empty at the end (ownTmpdir below), and starts
 * the one PostgreSQL server the whole test run shares: DATABASE_URL when set (CI points it
 * at a real server), otherwise an embedded cluster in a temp directory on a free port. Each test
 * file then creates its own database on it (test/support/database.ts), a migrated one as a copy of
 * the run's template (migrated-template.ts).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
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
  const tmp = await ownTmpdir();
  const external = process.env.DATABASE_URL?.trim();
  const prefix = `sb_test_${randomBytes(4).toString('hex')}_`;
  if (external) {
    project.provide('databaseUrl', external);
    project.provide('testDatabasePrefix', prefix);
    const dropper = startDroppingClosed(external, prefix);
    return async () => {
      await dropper.finish();
      await tmp.check();
    };
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
    await tmp.check();
  };
}

/**
 * This run's own TMPDIR, a folder in the machine's: the test files (forked after this setup) and
 * every child they start inherit it, so whatever a test makes with mkdtemp(tmpdir()) lands there,
 * apart from other runs sharing the machine's temporary folder. At the end it must be empty: a test
 * that leaves a folder behind fails the run (exit code 1) with the names, and the folder is then
 * removed all the same. tsx's compile cache is shared with the machine's through a link, so
 * children do not compile every file afresh; the link is the one thing allowed to stay.
 */
async function ownTmpdir(): Promise<{ check(): Promise<void> }> {
  const machine = tmpdir();
  const own = await mkdtemp(path.join(machine, 'sb-test-run-'));
  // As root the embedded server runs as `postgres`, which must get through to the folders tests open
  // to it (0711: through, not listing), as it gets through the machine's /tmp.
  await chmod(own, 0o711);
  const tsxCache = `tsx-${process.getuid?.() ?? 'user'}`;
  await mkdir(path.join(machine, tsxCache), { recursive: true, mode: 0o700 });
  await symlink(path.join(machine, tsxCache), path.join(own, tsxCache));
  process.env.TMPDIR = own;
  return {
    check: async () => {
      const left = (await readdir(own)).filter((name) => name !== tsxCache);
      await rm(own, { recursive: true, force: true });
      if (left.length === 0) return;
      process.stderr.write(
        `\nThe run left ${left.length} temporary folder(s) or file(s) in its TMPDIR (${own}, now removed); ` +
          `each test must remove what it makes:\n${left.map((name) => `  ${name}\n`).join('')}`,
      );
      process.exitCode = 1;
    },
  };
}
