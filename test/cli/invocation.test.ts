/**
 * How the CLI names itself in hints (invocation.ts), on real folder layouts: a clone, the package
 * installed with its bin on PATH, and the package reached some other way.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectInvocation } from '../../src/cli/invocation.ts';

const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

/** A package folder as npm lays it out: bin/switchboard.js and the compiled CLI in dist/. */
async function packageDir(withSources: boolean): Promise<{ root: string; module: string }> {
  const root = await mkdtemp(join(tmpdir(), 'sb-invocation-'));
  made.push(root);
  await mkdir(join(root, 'bin'));
  await writeFile(join(root, 'bin/switchboard.js'), '');
  await mkdir(join(root, 'dist/src/cli'), { recursive: true });
  if (withSources) await mkdir(join(root, 'src/cli'), { recursive: true });
  return { root, module: join(root, 'dist/src/cli/invocation.js') };
}

describe('the command a hint names', () => {
  it('in a clone: npm start -- from inside it, node <clone>/bin/switchboard.js from elsewhere', async () => {
    const { root, module } = await packageDir(true);
    await mkdir(join(root, 'docs'));
    expect(detectInvocation({}, join(root, 'docs'), module)).toEqual({ invocation: 'clone', prefix: 'npm start --' });
    expect(detectInvocation({}, tmpdir(), module)).toEqual({
      invocation: 'outside-clone',
      prefix: `node ${join(root, 'bin/switchboard.js')}`,
    });
  });

  it('installed with its bin on PATH: switchboard; otherwise the scoped name through npx, never the bare one', async () => {
    const { root, module } = await packageDir(false);
    const binDir = await mkdtemp(join(tmpdir(), 'sb-invocation-bin-'));
    made.push(binDir);
    await symlink(join(root, 'bin/switchboard.js'), join(binDir, 'switchboard'));
    expect(detectInvocation({ PATH: `/nonexistent:${binDir}` }, tmpdir(), module)).toEqual({
      invocation: 'installed',
      prefix: 'switchboard',
    });
    // A `switchboard` on PATH that is another copy does not count.
    const other = await packageDir(false);
    expect(detectInvocation({ PATH: binDir }, tmpdir(), other.module)).toEqual({
      invocation: 'npx',
      prefix: 'npx @switchboard-dev/switchboard',
    });
    expect(detectInvocation({ PATH: '' }, tmpdir(), module).prefix).toBe('npx @switchboard-dev/switchboard');
  });
});

describe('the command every hint and doc names', () => {
  it('is never a bare `npx switchboard` in src/, docs/ or the README (that name is not this package)', async () => {
    const repo = join(import.meta.dirname, '../..');
    // The files git tracks (or would): built output such as src/ui/dist/ is made from these.
    const files = execFileSync(
      'git',
      ['ls-files', '--cached', '--others', '--exclude-standard', 'src', 'docs', 'README.md'],
      {
        cwd: repo,
        encoding: 'utf8',
      },
    )
      .split('\n')
      .filter((file) => file !== '');
    expect(files).toEqual(expect.arrayContaining(['README.md', 'src/ui/client/sign-in/sign-in.tsx', 'docs/ui.md']));
    const bare = /\bnpx\s+(?:-y\s+|--yes\s+)?switchboard\b/;
    const found: string[] = [];
    for (const file of files) {
      const lines = (await readFile(join(repo, file), 'utf8').catch(() => '')).split('\n');
      lines.forEach((line, i) => {
        if (bare.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });
});
