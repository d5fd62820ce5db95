import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');
const bin = join(repo, 'bin/switchboard.js');
const srcDir = join(repo, 'src');
/** The CLI as a process, from source (bin/switchboard.js runs the same entry compiled in dist/). */
const cli = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  run(process.execPath, ['--import', 'tsx', join(srcDir, 'cli/entry.ts'), ...args], { cwd: repo, env });

function capture(): {
  io: { out: (t: string) => void; err: (t: string) => void };
  out: () => string;
  err: () => string;
} {
  let out = '';
  let err = '';
  return { io: { out: (t) => (out += t), err: (t) => (err += t) }, out: () => out, err: () => err };
}

describe('switchboard CLI', () => {
  it('prints help when run as a process', async () => {
    const { stdout } = await cli(['--help']);
    expect(stdout).toContain('switchboard [serve] [--config PATH] [--host HOST] [--port PORT]');
    expect(stdout).toContain('token create <name>');
    expect(stdout).toContain('trigger <provider> [sample]');
  });

  it('help lists every environment variable the server reads', async () => {
    const c = capture();
    expect(await main(['--help'], c.io)).toBe(0);
    // Grepped from src rather than listed here, so a variable added later cannot be missed. NODE_ENV
    // is the UI build script's, not the server's; PATH and TZ are only handed on to PostgreSQL.
    const sources = (await readdir(srcDir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    const read = new Set<string>();
    for (const file of sources) {
      const text = await readFile(join(srcDir, file), 'utf8');
      for (const m of text.matchAll(/\benv(?:\?\.|\.|\[['"])([A-Z][A-Z0-9_]+)/g))
        if (!['NODE_ENV', 'PATH', 'TZ'].includes(m[1] ?? '')) read.add(m[1] ?? '');
    }
    expect([...read]).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'SWITCHBOARD_DRAIN_TIMEOUT_MS', 'SWITCHBOARD_TOKEN']),
    );
    for (const name of read) expect(c.out(), name).toMatch(new RegExp(`\\b${name}\\b`));
    expect(c.out()).toMatch(/^ {2}SWITCHBOARD_DRAIN_TIMEOUT_MS +How long SIGTERM waits/m);
  });

  it('prints the package version', async () => {
    const c = capture();
    expect(await main(['--version'], c.io)).toBe(0);
    expect(c.out()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 naming the key for a bad config, without a stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-cli-'));
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'providers:\n  github: { preset: github, secrett: x }\n');
    const failure = await cli(['serve', '--config', file]).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain('providers.github.secrett: unknown field');
    expect(failure?.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 for unknown commands, flags and bad ports', async () => {
    for (const args of [['bogus'], ['serve', '--nope'], ['serve', '--port', 'http'], ['trigger']]) {
      const c = capture();
      expect(await main(args, c.io), args.join(' ')).toBe(2);
      expect(c.err()).toMatch(/^switchboard: /);
    }
  });

  it('exits 2 when the config file named by --config does not exist', async () => {
    const c = capture();
    expect(await main(['serve', '--config', '/nonexistent/switchboard.yaml'], c.io)).toBe(2);
    expect(c.err()).toContain('does not exist');
  });

  it('trigger names the configured providers when the provider is unknown', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-cli-'));
    const file = join(dir, 'sb.yaml');
    await writeFile(file, 'providers:\n  sandbox: { trust_mode: open }\n');
    const c = capture();
    expect(await main(['trigger', 'github', '--config', file], c.io)).toBe(2);
    expect(c.err()).toContain('providers: sandbox');
  });

  it('exits 1 with one line naming the problem when the embedded PostgreSQL cannot start', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sb-cli-data-'));
    // A folder where the cluster should be, that is not one: the start refuses before initdb.
    await mkdir(join(dataDir, 'postgres'));
    const env: NodeJS.ProcessEnv = { ...process.env, SWITCHBOARD_DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    const failure = await cli(['serve', '--port', '0'], env).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toBe(
      `switchboard: ${join(dataDir, 'postgres')} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away and start again\n`,
    );
    await rm(dataDir, { recursive: true, force: true });
  });
});

describe('bin/switchboard.js', () => {
  const made: string[] = [];
  afterAll(async () => {
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  /** The bin copied beside a dist/ of our making, as the package lays them out. */
  async function binWith(entry: string | null): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'sb-bin-'));
    made.push(dir);
    await mkdir(join(dir, 'bin'));
    await copyFile(bin, join(dir, 'bin/switchboard.js'));
    if (entry !== null) {
      await mkdir(join(dir, 'dist/src/cli'), { recursive: true });
      await writeFile(join(dir, 'dist/src/cli/entry.js'), entry);
    }
    return join(dir, 'bin/switchboard.js');
  }
  const outcome = (file: string, args: string[]) =>
    run(process.execPath, [file, ...args]).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it('runs the compiled entry point in dist/ with the arguments', async () => {
    const file = await binWith('process.stdout.write(JSON.stringify(process.argv.slice(2)));\n');
    expect(await outcome(file, ['serve', '--port', '0'])).toEqual({
      code: 0,
      stdout: '["serve","--port","0"]',
      stderr: '',
    });
  });

  it('says how to build when dist/ is missing, and passes any other failure through', async () => {
    const missing = await outcome(await binWith(null), ['--help']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'switchboard: dist/ is not built. Run `npm run build` (`npm ci` does, when the devDependencies are installed).\n',
    );
    const broken = await outcome(await binWith("import './not-there.js';\n"), ['--help']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('not-there.js');
    expect(broken.stderr).not.toContain('dist/ is not built');
  });
});
