/**
 * `switchboard listen` as a child process, from source, as a developer runs it: its output as it
 * comes, a way to wait for a line, and SIGINT/SIGTERM with the exit code and how long it took.
 * No vitest import, like spawn-switchboard.ts.
 */
import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { REPO_ROOT, SWITCHBOARD_FROM_SOURCE, type ChildExit } from './spawn-switchboard.ts';

export interface ListenChild {
  stdout(): string;
  stderr(): string;
  /** Polls until the output (stdout + stderr) matches; throws with the output after timeoutMs. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  readonly exited: Promise<ChildExit>;
  /** Sends the signal and waits for the exit; ms is the time from the signal to the exit. */
  stop(signal?: NodeJS.Signals): Promise<ChildExit & { ms: number }>;
}

/** The child's environment: this one's, minus what vitest adds and the switchboard variables. */
function listenEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('VITEST') || key === 'TEST' || key === 'NODE_OPTIONS' || key.startsWith('SWITCHBOARD_'))
      continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export function spawnListen(args: readonly string[], env: Record<string, string>): ListenChild {
  const child = spawn(process.execPath, [...SWITCHBOARD_FROM_SOURCE, 'listen', ...args], {
    cwd: REPO_ROOT,
    env: listenEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<ChildExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let done = false;
  // A failed test must not leave a listener running; once it has exited there is nothing to kill,
  // and the hook goes too (one per spawned child would pile up on process).
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => {
    done = true;
    process.off('exit', killOnExit);
  });
  return {
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(out + err)) {
        if (done) throw new Error(`listen exited before ${String(pattern)}:\n${out}${err}`);
        if (Date.now() > deadline) throw new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${out}${err}`);
        await delay(25);
      }
    },
    async stop(signal = 'SIGINT') {
      const started = Date.now();
      if (!done) child.kill(signal);
      const result = await Promise.race([
        exited,
        delay(10_000).then(() => {
          child.kill('SIGKILL');
          return exited;
        }),
      ]);
      return { ...result, ms: Date.now() - started };
    },
  };
}
