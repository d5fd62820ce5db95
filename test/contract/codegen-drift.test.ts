import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

describe('codegen drift check', () => {
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'switchboard-codegen-'));
    for (const dir of ['schemas', 'codegen', 'generated', 'docs/openspec', 'docs/reference', 'src/presets/samples']) {
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

  it('passes on the committed output', async () => {
    const { stdout } = await check();
    expect(stdout).toContain('up to date');
  });

  it('fails, naming the fix, when a schema changes without codegen', async () => {
    const file = join(scratch, 'schemas/event-summary.schema.json');
    const schema = JSON.parse(await readFile(file, 'utf8')) as { description: string };
    schema.description += ' Changed.';
    await writeFile(file, JSON.stringify(schema, null, 2));
    const failure = await check().then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('generated/types.ts');
    expect(failure?.stderr).toContain('run `npm run codegen`');
  });

  it('fails when a catalog entry changes without codegen, naming the provider table and the catalog', async () => {
    const file = join(scratch, 'schemas/providers/github.json');
    const entry = JSON.parse(await readFile(file, 'utf8')) as { title: string };
    entry.title = 'GitHub (renamed)';
    await writeFile(file, JSON.stringify(entry, null, 2));
    const failure = await check().then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('docs/providers.md');
    expect(failure?.stderr).toContain('generated/catalog.ts');
  }, 90_000);

  it('refuses a catalog entry that breaks the catalog schema, naming the file', async () => {
    const file = join(scratch, 'schemas/providers/github.json');
    const entry = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    entry['scheme'] = { kind: 'hmac', algorithm: 'md5' };
    await writeFile(file, JSON.stringify(entry, null, 2));
    const failure = await check().then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('schemas/providers/github.json');
  }, 90_000);
});
