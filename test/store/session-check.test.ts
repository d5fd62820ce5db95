/**
 * DATABASE_URL through a real PgBouncer (Debian's package; CI installs it): in transaction mode
 * switchboard refuses to start, before it takes any session lock, with a message that says what
 * to change; in session mode it starts; a pooler that refuses the statement_timeout connection
 * parameter gets its own message instead of the pooler's bare one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/postgres/free-port.ts';
import { postgresAccount } from '../../src/postgres/postgres-account.ts';
import { openDatabase } from '../../src/store/database/database.ts';
import { checkSessions, PoolerError, STORE_STARTUP_PARAMETERS } from '../../src/store/database/session-check.ts';
import { createEmptyDatabase, silentLogger } from '../support/database.ts';
import { REPO_ROOT, SWITCHBOARD_FROM_SOURCE } from '../support/spawn-switchboard.ts';

const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((file) => existsSync(file));
if (PGBOUNCER === undefined && process.env['CI'] === 'true') {
  throw new Error('PgBouncer is required under CI (Debian package pgbouncer; .ci/run installs it)');
}

interface Bouncer {
  url: string;
  stop(): Promise<void>;
}

/** A PgBouncer in front of `target`, in `mode`, on a free loopback port; run as postgres when we are root (it refuses root). */
async function startBouncer(target: string, mode: 'session' | 'transaction', ignoreTimeout = true): Promise<Bouncer> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-pgbouncer-'));
  const account = await postgresAccount();
  const server = new URL(target);
  const port = await findFreePort();
  const password = decodeURIComponent(server.password);
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `bounced = host=${server.hostname} port=${server.port || 5432} dbname=${server.pathname.slice(1)} ` +
        `user=${decodeURIComponent(server.username)}${password === '' ? '' : ` password=${password}`}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `pool_mode = ${mode}`,
      ...(ignoreTimeout ? [`ignore_startup_parameters = ${STORE_STARTUP_PARAMETERS.join(',')}`] : []),
      `unix_socket_dir = ${dir}`,
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  await writeFile(join(dir, 'users.txt'), `"${decodeURIComponent(server.username)}" ""\n`);
  if (account !== null) {
    await chmod(dir, 0o700);
    await chown(dir, account.uid, account.gid);
    for (const file of ['pgbouncer.ini', 'users.txt']) await chown(join(dir, file), account.uid, account.gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER ?? 'pgbouncer', [join(dir, 'pgbouncer.ini')], {
    stdio: 'ignore',
    ...(account === null ? {} : { uid: account.uid, gid: account.gid }),
  });
  const url = `postgres://${server.username}@127.0.0.1:${port}/bounced`;
  // Up once it answers a query through to PostgreSQL.
  for (let tries = 0; ; tries += 1) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (err: unknown) {
      await client.end().catch(() => undefined);
      if (tries > 100 || child.exitCode !== null) throw new Error(`pgbouncer did not start: ${String(err)}`);
      await delay(50);
    }
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe.skipIf(PGBOUNCER === undefined)('DATABASE_URL through PgBouncer', () => {
  let database: Awaited<ReturnType<typeof createEmptyDatabase>>;
  const bouncers: Bouncer[] = [];

  beforeAll(async () => {
    database = await createEmptyDatabase();
  });

  afterAll(async () => {
    await Promise.all(bouncers.map((b) => b.stop()));
    await database?.drop();
  });

  const bouncer = async (...args: Parameters<typeof startBouncer> extends [string, ...infer R] ? R : never) => {
    const started = await startBouncer(database.url, ...args);
    bouncers.push(started);
    return started;
  };

  it('passes on PostgreSQL itself: a NOTIFY on one connection reaches a LISTEN on another', async () => {
    await expect(checkSessions(database.url, { timeoutMs: 2_000, attempts: 1 })).resolves.toBeUndefined();
  });

  it('refuses transaction pooling, where a LISTEN hears nothing, saying what to change', async () => {
    const { url } = await bouncer('transaction');
    const refused = await checkSessions(url, { timeoutMs: 500, attempts: 2 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PoolerError);
    expect((refused as Error).message).toMatch(/transaction mode.*PgBouncer pool_mode = transaction/);
    expect((refused as Error).message).toMatch(/session-mode pool/);
  });

  it('opens through session pooling: the check passes and the migrations run', async () => {
    const { url } = await bouncer('session');
    const opened = await openDatabase({ databaseUrl: url, dataDir: tmpdir(), logger: silentLogger });
    try {
      expect(await opened.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM events`)).toBe(0);
    } finally {
      await opened.close();
    }
  });

  it('names the refused connection parameter and the setting that lets it through', async () => {
    const { url } = await bouncer('session', false);
    // The real command, as a user runs it: serve exits before it serves, with one plain line.
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [...SWITCHBOARD_FROM_SOURCE, 'serve', '--port', '0'], {
        env: { PATH: process.env['PATH'], DATABASE_URL: url, LOG_LEVEL: 'silent', SWITCHBOARD_DATA_DIR: tmpdir() },
        cwd: REPO_ROOT,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('exit', (code) => resolve({ code, stderr }));
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^switchboard: the server at DATABASE_URL refused the connection parameter statement_timeout: .*ignore_startup_parameters = statement_timeout,idle_in_transaction_session_timeout.*ALTER ROLE/s,
    );
  }, 60_000);
});
