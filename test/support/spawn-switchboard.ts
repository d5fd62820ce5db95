/**
 * Runs the real product as a child process, as an operator does
 * (`switchboard serve --config FILE --host 127.0.0.1 --port 0`), from the TypeScript sources
 * through tsx so that no build can be stale, or from dist/ for a run that makes sure it is fresh
 * (see childEntry), and hands back its
 * URL, its output and control over its life (SIGTERM, SIGKILL). Reliability tests, the soak and
 * the fuzz benchmark all start switchboard through here, so a crash, a hang or an unhandled
 * rejection in the real composition root is what they see.
 *
 * No vitest import: bench/ scripts use it too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOOPBACK } from './local-server.ts';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Node arguments that run the CLI's entry point from source, as bin/switchboard.js runs it from dist/. */
export const SWITCHBOARD_FROM_SOURCE: readonly string[] = ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/entry.ts')];
/** Node arguments that run the built CLI, exactly as the package's bin does. */
const SWITCHBOARD_FROM_DIST: readonly string[] = [path.join(REPO_ROOT, 'bin/switchboard.js')];

/**
 * Which build children run: the sources through tsx (the default), or dist/ when the run sets
 * SWITCHBOARD_TEST_CHILD=dist (the reliability suite does, after its global setup built dist/ if it
 * was older than the sources). A child restarted 20 times pays tsx's loader on every start: measured
 * 2.0-2.8 s of CPU per start from source against 1.0-1.2 s from dist/ (the loader thread resolves
 * and reads every module the product imports).
 */
function childEntry(): readonly string[] {
  return process.env.SWITCHBOARD_TEST_CHILD === 'dist' ? SWITCHBOARD_FROM_DIST : SWITCHBOARD_FROM_SOURCE;
}

export interface SpawnSwitchboardOptions {
  /** The config as an object (written as JSON, which is YAML) or as YAML text. */
  config: unknown;
  /** DATABASE_URL; null starts the embedded PostgreSQL in dataDir (no DATABASE_URL in the env). */
  databaseUrl: string | null;
  /** SWITCHBOARD_DATA_DIR; default a new temp directory (removed by cleanup()). */
  dataDir?: string;
  /** SWITCHBOARD_TOKEN; default a random one. null leaves it unset (managed tokens only). */
  token?: string | null;
  /** REDIS_URL; default unset (the product's default, redis://127.0.0.1:6379). */
  redisUrl?: string;
  /** LOG_LEVEL; default info. */
  logLevel?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Default 0: a free port, read back from the "listening on" line. */
  port?: number;
  /** Node's own flags, before the entry point (e.g. --cpu-prof, which NODE_OPTIONS may not carry). */
  nodeArgs?: readonly string[];
  /** More arguments after `serve --config … --host … --port …` (e.g. --role worker). */
  extraArgs?: readonly string[];
  /** How long start-up may take; default 60 s (tsx compiles on first start, embedded initdb is slow). */
  startTimeoutMs?: number;
  /**
   * Run it as the leader of a process group of its own, as a shell runs a foreground command, so
   * that a test can signal the whole group the way a terminal's Ctrl-C does (kill(-pid, SIGINT)).
   */
  processGroup?: boolean;
  /**
   * Run it with a terminal for its stdout, as a developer does, through util-linux `script` (a
   * pseudo-terminal; its own output comes here, with the terminal's \r\n line ends).
   */
  terminal?: boolean;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedSwitchboard {
  readonly pid: number;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  readonly mcpUrl: string;
  /** The SWITCHBOARD_TOKEN it runs with (undefined when started with token: null). */
  readonly token: string | undefined;
  readonly dataDir: string;
  readonly configPath: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  stderr(): string;
  /** The pino JSON lines of stdout, parsed; other lines are skipped. */
  logLines(): Record<string, unknown>[];
  /** Resolves when the process has exited (already resolved if it has). */
  readonly exited: Promise<ChildExit>;
  isRunning(): boolean;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then wait for exit (SIGKILL after timeoutMs). */
  stop(timeoutMs?: number): Promise<ChildExit>;
  /** Resident set size in bytes, from /proc (0 when the process is gone). */
  rss(): number;
  /** Removes the data dir when it was created here (the config file goes when the child exits). */
  cleanup(): void;
}

const LISTENING = /switchboard listening on (http:\/\/[^\s]+)/;
const running = new Set<ChildProcess>();
/** The config folders of children still running (each is removed when its child exits). */
const configDirs = new Set<string>();

// A test that fails or times out must not leave servers behind holding ports and connections, nor
// their config folders in the temporary folder.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of configDirs) rmSync(dir, { recursive: true, force: true });
});

/** One word for sh -c, whatever it holds. */
const shellQuoted = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

export function randomToken(): string {
  return `sbtest-${randomBytes(18).toString('hex')}`;
}

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The child's environment is exactly what the options say, not whatever the test run carries.
  for (const key of [
    'DATABASE_URL',
    'SWITCHBOARD_TOKEN',
    'REDIS_URL',
    'SWITCHBOARD_CONFIG',
    'SWITCHBOARD_DATA_DIR',
    'PORT',
    'LOG_LEVEL',
    'SWITCHBOARD_TEST_CHILD',
  ]) {
    delete env[key];
  }
  // vitest's worker variables would make tsx or the product behave differently from production.
  for (const key of Object.keys(env))
    if (key.startsWith('VITEST') || key === 'TEST' || key === 'NODE_OPTIONS') delete env[key];
  return env;
}

export async function spawnSwitchboard(options: SpawnSwitchboardOptions): Promise<SpawnedSwitchboard> {
  const ownDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'switchboard-child-'));
  const configDir = mkdtempSync(path.join(tmpdir(), 'switchboard-config-'));
  const configPath = path.join(configDir, 'switchboard.yaml');
  writeFileSync(
    configPath,
    typeof options.config === 'string' ? options.config : JSON.stringify(options.config, null, 2),
  );
  const token = options.token === null ? undefined : (options.token ?? randomToken());

  const env = baseEnv();
  env.SWITCHBOARD_DATA_DIR = dataDir;
  env.LOG_LEVEL = options.logLevel ?? 'info';
  if (options.databaseUrl !== null) env.DATABASE_URL = options.databaseUrl;
  if (token !== undefined) env.SWITCHBOARD_TOKEN = token;
  if (options.redisUrl !== undefined) env.REDIS_URL = options.redisUrl;
  Object.assign(env, options.env ?? {});

  const argv = [
    ...(options.nodeArgs ?? []),
    ...childEntry(),
    'serve',
    '--config',
    configPath,
    '--host',
    LOOPBACK,
    '--port',
    String(options.port ?? 0),
    ...(options.extraArgs ?? []),
  ];
  // script -e exits with the child's code, -f flushes each write, -q prints nothing of its own.
  const [command, args] =
    options.terminal === true
      ? ['script', ['-qfec', [process.execPath, ...argv].map(shellQuoted).join(' '), '/dev/null']]
      : [process.execPath, argv];
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup ?? false,
  });
  if (child.pid === undefined) throw new Error('switchboard child did not start');
  running.add(child);
  const pid = child.pid;

  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr?.on('data', (chunk: string) => {
    err += chunk;
  });
  let exitInfo: ChildExit | null = null;
  configDirs.add(configDir);
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      // The config was read at start-up: its folder goes with the child, whether or not the test
      // calls cleanup() (the data directory stays until cleanup(): a test may restart on it).
      rmSync(configDir, { recursive: true, force: true });
      configDirs.delete(configDir);
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  const output = (): string => out + err;

  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`switchboard did not start within ${timeoutMs} ms; output:\n${output().slice(-4000)}`));
    }, timeoutMs);
    const onData = (): void => {
      const match = LISTENING.exec(out);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    void exited.then((info) => {
      clearTimeout(timer);
      reject(
        new Error(
          `switchboard exited during start-up (code ${info.code}, signal ${info.signal}); output:\n${output().slice(-4000)}`,
        ),
      );
    });
  });
  const port = Number(new URL(url).port);

  const isRunning = (): boolean => exitInfo === null;
  return {
    pid,
    url,
    port,
    mcpUrl: `${url}/mcp`,
    token,
    dataDir,
    configPath,
    output,
    stderr: () => err,
    logLines: () =>
      out.split('\n').flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    exited,
    isRunning,
    kill: (signal) => {
      if (isRunning()) child.kill(signal);
    },
    stop: async (stopTimeoutMs = 30_000) => {
      if (!isRunning()) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    rss: () => {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
        return kb === undefined ? 0 : Number(kb) * 1024;
      } catch {
        return 0;
      }
    },
    cleanup: () => {
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Waits for the child to exit, failing after timeoutMs. */
export async function waitForExit(child: SpawnedSwitchboard, timeoutMs: number): Promise<ChildExit> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`switchboard pid ${child.pid} did not exit within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([child.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
