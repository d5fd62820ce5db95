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
    for (const dir of ['schemas', 'codegen', 'generated', 'docs/openspec', 'docs/reference']) {
      await cp(join(root, dir), join(scratch, dir), { recursive: true });
    }
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
});
