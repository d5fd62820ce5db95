/**
 * `switchboard data info | rm`: info sizes a cluster without loading the database's modules, and rm
 * removes only a cluster folder switchboard made for this data directory, never one in use.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPool, sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/cli/data-command.ts';
import { clusterId, CLUSTER_LOCATION_FILE } from '../../src/postgres/cluster-placement.ts';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres.ts';
import { silentLogger } from '../support/database.ts';
import { childEnv, cliOutcome, REPO, tempDir } from './support/cli-process.ts';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;

/** A file of `bytes` bytes of noise (so that no filesystem stores it sparse). */
async function filler(file: string, bytes: number): Promise<void> {
  await writeFile(file, Buffer.alloc(bytes, 'switchboard'));
}

/** A data directory whose postgres.location names `clusterDir`. */
async function dataDirNaming(clusterDir: string): Promise<string> {
  const dataDir = join(await tempDir('sb-data-rm-'), 'data');
  await mkdir(dataDir);
  await writeFile(join(dataDir, CLUSTER_LOCATION_FILE), `${clusterDir}\n`);
  await writeFile(join(dataDir, 'postgres.password'), 'x\n');
  return dataDir;
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

describe('switchboard data rm', () => {
  it('resolves `..` before it checks a recorded location: <P>/clusters/../postgres is refused, <P> kept', async () => {
    const parent = await tempDir('sb-data-rm-dotdot-');
    await mkdir(join(parent, 'clusters'));
    await mkdir(join(parent, 'postgres'));
    await filler(join(parent, 'postgres', 'PG_VERSION'), 3);
    await filler(join(parent, 'precious'), 100);
    // Written as is: path.join would resolve the `..` the attack relies on.
    const dataDir = await dataDirNaming(`${parent}/clusters/../postgres`);

    const removed = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(removed.stderr).toBe(
      `switchboard: ${join(dataDir, CLUSTER_LOCATION_FILE)} names "${join(parent, 'postgres')}", which is not a ` +
        'cluster folder switchboard made for this data directory (…/clusters/<id>/postgres); remove it yourself if it is one\n',
    );
    expect(removed.code).toBe(1);
    expect((await readdir(parent)).sort()).toEqual(['clusters', 'postgres', 'precious']);
    expect(await readdir(dataDir)).toContain('postgres.password');
  }, 60_000);

  it('refuses a cluster folder made for another data directory, or one whose lock a live process holds', async () => {
    const system = await tempDir('sb-data-rm-system-');
    // Another project's cluster, in the shape placeCluster makes, with that project's id.
    const other = await realpath(await tempDir('sb-data-rm-other-'));
    const othersHome = join(system, 'clusters', clusterId(other));
    await mkdir(join(othersHome, 'postgres'), { recursive: true });
    await filler(join(othersHome, 'postgres', 'PG_VERSION'), 3);
    const dataDir = await dataDirNaming(join(othersHome, 'postgres'));
    const refused = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('which is not a cluster folder switchboard made for this data directory');
    expect(await readdir(join(othersHome, 'postgres'))).toEqual(['PG_VERSION']);

    // This data directory's own id, but the cluster's lock is held by a live process (this one), as a
    // running server holds it: refused, and nothing removed.
    const ownHome = join(system, 'clusters', clusterId(await realpath(dataDir)));
    await mkdir(join(ownHome, 'postgres'), { recursive: true });
    await filler(join(ownHome, 'postgres', 'PG_VERSION'), 3);
    await writeFile(join(dataDir, CLUSTER_LOCATION_FILE), `${join(ownHome, 'postgres')}\n`);
    const lock = JSON.stringify({ pid: process.pid, host: hostname(), nonce: 'test' });
    await writeFile(join(ownHome, 'switchboard.lock'), lock);
    const locked = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(locked.stderr).toBe(
      `switchboard: the embedded cluster in ${ownHome} is in use by a running switchboard (pid ${process.pid}); stop it first\n`,
    );
    expect(locked.code).toBe(1);
    expect(await readdir(join(ownHome, 'postgres'))).toEqual(['PG_VERSION']);

    // Unlocked, but a postmaster (this process, for the test) still runs on it: refused too.
    await writeFile(join(ownHome, 'switchboard.lock'), '');
    await writeFile(join(ownHome, 'postgres', 'postmaster.pid'), `${process.pid}\n`);
    const running = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(running.stderr).toContain(
      `switchboard: PostgreSQL (pid ${process.pid}) is running on ${join(ownHome, 'postgres')}`,
    );
    expect(running.code).toBe(1);

    // Neither: it is this data directory's cluster, and it goes.
    await writeFile(join(ownHome, 'postgres', 'postmaster.pid'), '');
    const removed = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
    expect(removed.stderr).toBe('');
    expect(removed.code).toBe(0);
    expect(await readdir(join(system, 'clusters'))).toEqual([basename(othersHome)]);
  }, 60_000);

  it("will not start on a recorded place that is not this data directory's own cluster folder", async () => {
    // The record is checked as `data rm` checks it, before anything is spawned: another project's
    // cluster folder (in the shape placeCluster makes, with that project's id) and a `..` path out
    // of clusters/ are both refused, and neither folder is touched.
    const system = await tempDir('sb-data-start-system-');
    const other = await realpath(await tempDir('sb-data-start-other-'));
    const othersCluster = join(system, 'clusters', clusterId(other), 'postgres');
    await mkdir(othersCluster, { recursive: true });
    await filler(join(othersCluster, 'PG_VERSION'), 3);
    for (const recorded of [othersCluster, `${system}/clusters/../postgres`]) {
      await mkdir(join(system, 'postgres'), { recursive: true });
      const dataDir = await dataDirNaming(recorded);
      await expect(
        startEmbeddedPostgres({ dataDir, systemDir: system, logger: silentLogger, durable: false }),
      ).rejects.toThrow('which is not a cluster folder switchboard made for this data directory');
      expect(await readdir(othersCluster)).toEqual(['PG_VERSION']);
      expect(await readdir(join(system, 'postgres'))).toEqual([]);
    }
  }, 60_000);

  it.runIf(asRoot)(
    "never removes another project's running cluster named by this data directory's record",
    async () => {
      // As root, a data directory below a mode 0700 folder has its cluster placed in the system
      // directory (clusters/<id>/postgres), as on a shared host; the server locks that folder too.
      const closed = await tempDir('sb-data-rm-closed-');
      const system = await tempDir('sb-data-rm-system-');
      await chmod(system, 0o755);
      const server = await startEmbeddedPostgres({
        dataDir: join(closed, 'project-b'),
        systemDir: system,
        logger: silentLogger,
        durable: false,
      });
      try {
        const home = join(server.clusterDir, '..');
        expect(JSON.parse(await readFile(join(home, 'switchboard.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
        const dataDir = await dataDirNaming(server.clusterDir);
        const refused = await cliOutcome(['data', 'rm', '--yes'], childEnv({ SWITCHBOARD_DATA_DIR: dataDir }));
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('which is not a cluster folder switchboard made for this data directory');
        const pool = await createPool(server.url, { maximumPoolSize: 1 });
        try {
          expect(await pool.oneFirst(sql.unsafe`SELECT 1`)).toBe(1);
        } finally {
          await pool.end();
        }
      } finally {
        await server.stop();
      }
      await expect(readdir(join(server.clusterDir, '..'))).resolves.not.toContain('switchboard.lock');
    },
    120_000,
  );
});
