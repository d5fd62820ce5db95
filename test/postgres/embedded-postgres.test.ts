import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DataDirInUseError, isProcessAlive, LOCK_FILE_NAME } from '../../src/postgres/data-dir-lock.ts';
import { createDatabasePool, openDatabase, type Database } from '../../src/store/database/database.ts';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres.ts';
import { findFreePort, POSTGRES_DEFAULT_PORT } from '../../src/postgres/free-port.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { databaseUrl, freshDatabase, silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

const open = (dataDir: string, port?: number): Promise<Database> =>
  openDatabase({ dataDir, logger: silentLogger, embedded: { durable: false, port } });

/** Something listening on 5432 for the duration, unless a real PostgreSQL already is. */
async function occupyDefaultPort(): Promise<Server | null> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(null));
    server.listen(POSTGRES_DEFAULT_PORT, '127.0.0.1', () => resolve(server));
  });
}

/**
 * A live process named `postgres` (a symlink called postgres to sleep: the kernel names a process
 * after the file it ran), standing in for a server left behind on the data dir.
 */
async function fakePostmaster(dir: string): Promise<ChildProcess> {
  const link = path.join(dir, 'postgres');
  await symlink('/bin/sleep', link);
  const child = spawn(link, ['60'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('spawn', resolve));
  return child;
}

const deadPid = (): number => {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid;
};

describe('embedded PostgreSQL', () => {
  let dataDir: string;
  let blocker: Server | null;
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    // mkdtemp makes a private directory: as root the server must still get into it.
    dataDir = await mkdtemp(path.join(tmpdir(), 'switchboard-embedded-'));
    blocker = await occupyDefaultPort();
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    blocker?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts in a fresh data dir beside a server on 5432, refuses a second instance, keeps its data across restarts', async () => {
    const first = await open(dataDir);
    cleanups.push(() => first.close());
    const embedded = first.embedded;
    if (!embedded) throw new Error('expected an embedded server');
    expect(embedded.port).not.toBe(POSTGRES_DEFAULT_PORT);
    expect(new URL(first.url).hostname).toBe('127.0.0.1');
    expect(embedded.clusterDir).toBe(path.join(dataDir, 'postgres'));
    // New WAL segments are not zero-filled: that write stalled every commit behind it (ADR).
    expect(await first.pool.oneFirst(sql.unsafe`SHOW wal_init_zero`)).toBe('off');
    expect((await stat(path.join(dataDir, 'postgres.password'))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path.join(dataDir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid: process.pid });

    const payload = Buffer.from([0x00, 0xff, 0x10, 0x7b]);
    const { event } = await createEventStore(first.pool).insert(newEvent({ payload }));

    const second = open(dataDir);
    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(open(dataDir)).rejects.toThrow(
      new RegExp(`data directory .* is in use by another switchboard \\(pid ${process.pid}\\)`),
    );

    await first.close();
    expect(isProcessAlive(embedded.pid)).toBe(false);
    await expect(stat(path.join(dataDir, LOCK_FILE_NAME))).rejects.toThrow();

    // Restart over a lock left behind by a switchboard that died: it is taken over.
    await writeFile(
      path.join(dataDir, LOCK_FILE_NAME),
      JSON.stringify({ pid: deadPid(), host: hostname(), nonce: 'x' }),
    );
    const again = await open(dataDir);
    expect(JSON.parse(await readFile(path.join(dataDir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
    cleanups.push(() => again.close());
    const stored = await createEventStore(again.pool).get(event.id);
    expect(stored?.payload.equals(payload)).toBe(true);
    await again.close();
  });

  it('explains a PostgreSQL left running on the data dir instead of starting beside it', async () => {
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    // A live process called postgres named in the pid file: refuse and explain.
    const linkDir = await mkdtemp(path.join(tmpdir(), 'switchboard-fake-postmaster-'));
    const postmaster = await fakePostmaster(linkDir);
    const serverPid = postmaster.pid ?? 0;
    await writeFile(pidFile, `${serverPid}\n${path.join(dataDir, 'postgres')}\n`);
    try {
      await expect(open(dataDir)).rejects.toThrow(
        new RegExp(`PostgreSQL \\(pid ${serverPid}.*still running.*kill -INT ${serverPid}`),
      );
      // The refusal released the switchboard lock again.
      await expect(stat(path.join(dataDir, LOCK_FILE_NAME))).rejects.toThrow();
    } finally {
      postmaster.kill();
      await rm(pidFile, { force: true });
      await rm(linkDir, { recursive: true, force: true });
    }
  });

  it('clears a stale pid file, and one pool keeps working across a server restart', async () => {
    // A pid reused by another program (this test runner): the file is stale and is cleared.
    await writeFile(
      path.join(dataDir, 'postgres', 'postmaster.pid'),
      `${process.pid}\n${path.join(dataDir, 'postgres')}\n`,
    );
    const database = await open(dataDir);
    cleanups.push(() => database.close());
    const port = database.embedded?.port;
    const ping = () => database.pool.oneFirst(sql.unsafe`SELECT 1 AS one`);
    expect(await ping()).toBe(1);

    await database.embedded?.stop();
    await expect(ping()).rejects.toThrow();

    const restarted = await startEmbeddedPostgres({ dataDir, logger: silentLogger, port, durable: false });
    cleanups.push(() => restarted.stop());
    expect(restarted.port).toBe(port);
    expect(await ping()).toBe(1);
    expect(await Promise.all([ping(), ping(), ping()])).toEqual([1, 1, 1]);
    await database.pool.end();
    await restarted.stop();
  });
});

describe('openDatabase with DATABASE_URL', () => {
  it('migrates and serves the given database and leaves the server running on close', async () => {
    const target = await freshDatabase({ migrate: false });
    try {
      const database = await openDatabase({ databaseUrl: target.url, dataDir: '/nonexistent', logger: silentLogger });
      expect(database.embedded).toBeNull();
      await createEventStore(database.pool).insert(newEvent());
      await database.close();
      await database.close();
      expect(await target.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM events`)).toBe(1);
    } finally {
      await target.close();
    }
  });

  it('recovers by itself after its connections are killed', async () => {
    const target = await freshDatabase({ migrate: false });
    try {
      const ping = () => target.pool.oneFirst(sql.unsafe`SELECT 1 AS one`);
      await Promise.all([ping(), ping(), ping()]);
      const admin = await createDatabasePool(inject('databaseUrl'), { maximumPoolSize: 1 });
      const killed = await admin.oneFirst(sql.type(z.object({ count: z.number() }))`
        SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity WHERE datname = ${target.name}
      `);
      await admin.end();
      expect(killed).toBeGreaterThanOrEqual(1);
      // Connections that died while idle are dropped by the pool; at worst one in-flight query fails.
      const outcomes = await Promise.allSettled([ping(), ping(), ping()]);
      expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
      expect(await Promise.all([ping(), ping(), ping(), ping()])).toEqual([1, 1, 1, 1]);
    } finally {
      await target.close();
    }
  });

  it('retries an unreachable server until startupTimeoutMs, but fails fast on a wrong database', async () => {
    const port = await findFreePort();
    const started = Date.now();
    await expect(
      openDatabase({
        databaseUrl: `postgres://postgres@127.0.0.1:${port}/x`,
        dataDir: '/nonexistent',
        logger: silentLogger,
        startupTimeoutMs: 700,
      }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);

    const fastStart = Date.now();
    await expect(
      openDatabase({
        databaseUrl: databaseUrl('sb_test_never_created'),
        dataDir: '/nonexistent',
        logger: silentLogger,
      }),
    ).rejects.toThrow(/does not exist/);
    expect(Date.now() - fastStart).toBeLessThan(5_000);
  });
});
