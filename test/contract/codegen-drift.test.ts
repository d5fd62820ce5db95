import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

// Each case runs the whole codegen in a child (about 8 s of CPU, formatting included): a fixed
// amount of work that passed 30 s beside a loaded run, so the file gives each case more.
describe('codegen drift check', { timeout: 120_000 }, () => {
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'switchboard-codegen-'));
    // src/ too: the provider table's scheme cells are each scheme engine's own words (verify/engines/).
    for (const dir of ['catalog', 'schemas', 'codegen', 'generated', 'docs/openspec', 'docs/reference', 'src']) {
      await cp(join(root, dir), join(scratch, dir), { recursive: true });
    }
    for (const file of ['docs/providers.md', 'README.md']) await cp(join(root, file), join(scratch, file));
    await symlink(join(root, 'node_modules'), join(scratch, 'node_modules'));
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  const check = () =>
    run(process.execPath, ['--import', 'tsx', join(scratch, 'codegen/generate.ts'), '--check'], {
      env: { ...process.env, SWITCHBOARD_CODEGEN_ROOT: scratch },
    });

  /** The check's failure (exit code and stderr), or null when it passes. */
  const checkFailure = () =>
    check().then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );

  /** Changes one JSON file of the scratch copy. */
  async function editJson<T>(path: string, edit: (doc: T) => void): Promise<void> {
    const file = join(scratch, path);
    const doc = JSON.parse(await readFile(file, 'utf8')) as T;
    edit(doc);
    await writeFile(file, JSON.stringify(doc, null, 2));
  }

  it('passes on the committed output', async () => {
    const { stdout } = await check();
    expect(stdout).toContain('up to date');
  });

  it('fails, naming the fix, when a schema changes without codegen', async () => {
    await editJson<{ description: string }>('schemas/event-summary.schema.json', (schema) => {
      schema.description += ' Changed.';
    });
    const failure = await checkFailure();
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('generated/types.ts');
    expect(failure?.stderr).toContain('run `npm run codegen`');
  });

  it('fails when a catalog entry changes without codegen, naming the provider table and the catalog', async () => {
    await editJson<{ title: string }>('catalog/github/provider.json', (entry) => {
      entry.title = 'GitHub (renamed)';
    });
    const failure = await checkFailure();
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('docs/providers.md');
    expect(failure?.stderr).toContain('generated/catalog.ts');
  }, 90_000);

  it('refuses a catalog entry that breaks the catalog schema, naming the file', async () => {
    await editJson<Record<string, unknown>>('catalog/github/provider.json', (entry) => {
      entry['scheme'] = { kind: 'hmac', algorithm: 'md5' };
    });
    const failure = await checkFailure();
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('catalog/github/provider.json');
  }, 90_000);
});
