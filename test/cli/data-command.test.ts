/**
 * `switchboard data info`: sizes a cluster without loading the database's modules.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/cli/data-command.ts';
import { childEnv, cliOutcome, REPO, tempDir } from './support/cli-process.ts';

const run = promisify(execFile);

/** A file of `bytes` bytes of noise (so that no filesystem stores it sparse). */
async function filler(file: string, bytes: number): Promise<void> {
  await writeFile(file, Buffer.alloc(bytes, 'switchboard'));
}

describe('switchboard data info', () => {
  it('sizes the data directory and its cluster in one walk, loading no database module', async () => {
    const dataDir = join(await tempDir('sb-data-info-'), 'data');
    // A cluster's shape: many small files in nested folders.
    for (let folder = 0; folder < 20; folder += 1) {
      const dir = join(dataDir, 'postgres', 'base', String(folder));
      await mkdir(dir, { recursive: true });
      for (let file = 0; file < 25; file += 1) await filler(join(dir, String(file)), 8192 * (1 + (file % 3)));
    }
    await filler(join(dataDir, 'token'), 64);
    const log = join(dataDir, '..', 'modules.log');
    const recorder = join(import.meta.dirname, 'support/record-modules.mjs');
    const info = await cliOutcome(
      ['data', 'info'],
      childEnv({ SWITCHBOARD_DATA_DIR: dataDir, SB_MODULES_LOG: log }),
      REPO,
      ['--import', recorder],
    );
    expect(info.stderr).toBe('');
    expect(info.code).toBe(0);
    // The same bytes du counts (its 1 KiB blocks).
    const du = async (path: string): Promise<number> =>
      Number((await run('du', ['-sk', path])).stdout.split('\t')[0]) * 1024;
    expect(info.stdout).toContain(
      `data directory  ${dataDir}  (${formatBytes(await du(dataDir))}, the cluster included)\n`,
    );
    expect(info.stdout).toContain(
      `cluster         ${join(dataDir, 'postgres')}  (${formatBytes(await du(join(dataDir, 'postgres')))})\n`,
    );

    // What made it slow was loading the database's modules (slonik, pg and the store) for a
    // function that reads two environment variables: none of them is loaded now.
    const loaded = [...new Set((await readFile(log, 'utf8')).split('\n'))].filter((url) => url.startsWith('file:'));
    const files = loaded.map((url) => relative(REPO, fileURLToPath(url)));
    expect(files.filter((file) => /node_modules\/(slonik|pg|pg-[a-z-]+|pino|ajv|koa)\//.test(file))).toEqual([]);
    expect(files.filter((file) => file.startsWith('src/store/'))).toEqual(['src/store/database/database-options.ts']);
  }, 60_000);
});
