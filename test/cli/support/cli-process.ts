/**
 * The CLI as the tests of test/cli run it: as a process from source (bin/switchboard.js runs the
 * same entry compiled in dist/), in-process through main() with its output captured, in an
 * environment that is exactly what the test says, with temporary folders that go with the test.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { onTestFinished } from 'vitest';

const run = promisify(execFile);
export const REPO = join(import.meta.dirname, '../../..');
const ENTRY = join(REPO, 'src/cli/entry.ts');
/** tsx's loader by its path, so that a child run outside the repository (`init` in a project) finds it. */
const TSX = pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href;

export interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the CLI from source as a process; never rejects. `nodeArgs` go before the entry point. */
export async function cliOutcome(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd = REPO,
  nodeArgs: readonly string[] = [],
): Promise<CliOutcome> {
  const started = performance.now();
  return run(process.execPath, ['--import', TSX, ...nodeArgs, ENTRY, ...args], { cwd, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr, ms: performance.now() - started }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
      ms: performance.now() - started,
    }),
  );
}

/** The environment of a CLI child: exactly what the test says, not what the test run carries. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...extra };
  for (const key of ['DATABASE_URL', 'SWITCHBOARD_TOKEN', 'SWITCHBOARD_CONFIG', 'PORT', 'NODE_OPTIONS'])
    if (!(key in extra)) delete env[key];
  for (const key of Object.keys(env)) if (key.startsWith('VITEST')) delete env[key];
  return env;
}

/** A new folder in TMPDIR, removed when the test finishes, passed or not. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** main()'s out and err, written to strings. */
export function capture(): {
  io: { out: (t: string) => void; err: (t: string) => void };
  out: () => string;
  err: () => string;
} {
  let out = '';
  let err = '';
  return { io: { out: (t) => (out += t), err: (t) => (err += t) }, out: () => out, err: () => err };
}
