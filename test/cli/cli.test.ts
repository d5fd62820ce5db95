import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';

const run = promisify(execFile);
const bin = join(import.meta.dirname, '../../bin/switchboard.js');
const srcDir = join(import.meta.dirname, '../../src');

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
  it('prints help through the bin entry with no build step', async () => {
    const { stdout } = await run(process.execPath, [bin, '--help']);
    expect(stdout).toContain('switchboard [serve] [--config PATH] [--host HOST] [--port PORT]');
    expect(stdout).toContain('token create <name>');
    expect(stdout).toContain('trigger <provider> [sample]');
  });

  it('help lists every environment variable the server reads', async () => {
    const c = capture();
    expect(await main(['--help'], c.io)).toBe(0);
    // Grepped from src rather than listed here, so a variable added later cannot be missed. NODE_ENV
    // is the UI build script's, not the server's.
    const sources = (await readdir(srcDir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    const read = new Set<string>();
    for (const file of sources) {
      const text = await readFile(join(srcDir, file), 'utf8');
      for (const m of text.matchAll(/\benv(?:\?\.|\.|\[['"])([A-Z][A-Z0-9_]+)/g))
        if (m[1] !== 'NODE_ENV') read.add(m[1] ?? '');
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
    const failure = await run(process.execPath, [bin, 'serve', '--config', file]).then(
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
});
