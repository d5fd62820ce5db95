/**
 * Adding a provider whose scheme exists is one folder (docs/providers.md, "Adding a provider"). On
 * a scratch copy of the repository, bitbucket's folder is copied as catalog/acme/ with its name
 * changed, and nothing else is touched by hand: codegen alone rewrites its own outputs, the project
 * still type-checks, and acme's proof case passes the catalog table and trigger's sample check. A
 * registry, an exhaustive map or a test list that had to name the new preset would fail here.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

/** What a repository copy needs to generate, type-check and run the catalog's tests. */
const COPIED = ['catalog', 'codegen', 'schemas', 'generated', 'src', 'test', 'bench', 'scripts', 'bin', 'docs'];
const COPIED_FILES = ['README.md', 'package.json', 'tsconfig.json', 'vitest.config.ts', 'vitest.reliability.config.ts'];

/** Every file's SHA-256 under `dir`, by path from it (node_modules left out). */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = await readdir(dir, { recursive: true, withFileTypes: true });
  const hashes = new Map<string, string>();
  for (const file of files) {
    if (!file.isFile()) continue;
    const path = join(file.parentPath, file.name);
    const rel = relative(dir, path);
    if (rel.startsWith('node_modules')) continue;
    hashes.set(
      rel,
      createHash('sha256')
        .update(await readFile(path))
        .digest('hex'),
    );
  }
  return hashes;
}

/** A copy of a provider's folder under a new name: its name replaced in every file it holds. */
async function copyProvider(catalog: string, from: string, to: string, title: string): Promise<void> {
  await mkdir(join(catalog, to));
  for (const file of await readdir(join(catalog, from))) {
    const text = (await readFile(join(catalog, from, file), 'utf8')).replaceAll(from, to).replaceAll(title, 'Acme');
    await writeFile(join(catalog, to, file.replace(from, to)), text);
  }
}

// Codegen, a whole type-check and a vitest run in a child: a fixed amount of work, about a minute
// of CPU on an idle machine.
describe('a new provider is one folder', { timeout: 600_000 }, () => {
  let scratch: string;
  let before: Map<string, string>;
  let changed: string[];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'switchboard-new-provider-'));
    for (const dir of COPIED) await cp(join(root, dir), join(scratch, dir), { recursive: true });
    for (const file of COPIED_FILES) await cp(join(root, file), join(scratch, file));
    await symlink(join(root, 'node_modules'), join(scratch, 'node_modules'));
    await copyProvider(join(scratch, 'catalog'), 'bitbucket', 'acme', 'Bitbucket');
    before = await snapshot(scratch);
    await run(process.execPath, ['--import', 'tsx', join(scratch, 'codegen/generate.ts')], {
      env: { ...process.env, SWITCHBOARD_CODEGEN_ROOT: scratch },
    });
    const after = await snapshot(scratch);
    changed = [...after.keys()].filter((path) => before.get(path) !== after.get(path)).sort();
  }, 300_000);

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('is written into the catalog, the docs table and the count by codegen alone', async () => {
    expect(changed).toEqual([
      'README.md',
      'docs/providers.md',
      'docs/reference/openapi.json',
      'generated/catalog.ts',
      'generated/constants.ts',
      'generated/samples.ts',
      'generated/schemas.ts',
      'generated/types.ts',
      'generated/validators.js',
      'schemas/preset-name.schema.json',
    ]);
    expect(await readFile(join(scratch, 'docs/providers.md'), 'utf8')).toContain('| `acme` | [Acme Cloud]');
  });

  it('type-checks with no other file naming it', async () => {
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', scratch]);
  });

  it('passes its proof case and trigger’s sample check', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        join(root, 'node_modules/vitest/vitest.mjs'),
        'run',
        'test/verify/providers/provider-cases.test.ts',
        'test/verify/providers/trigger-samples.test.ts',
        '-t',
        'acme',
        '--reporter=json',
      ],
      { cwd: scratch, env: { ...process.env, CI: 'true' }, maxBuffer: 64 * 1024 * 1024 },
    );
    const report = JSON.parse(stdout) as { numPassedTests: number; numFailedTests: number; success: boolean };
    // provider-cases' checks of acme's case, and trigger's: every one that ran passed.
    expect(report).toMatchObject({ numFailedTests: 0, success: true });
    expect(report.numPassedTests).toBeGreaterThanOrEqual(10);
  });
});
