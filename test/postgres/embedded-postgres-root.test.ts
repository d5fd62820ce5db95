/**
 * As root the embedded PostgreSQL runs as the postgres user, which a mode 0700 parent shuts out of
 * the data directory or the binaries (a project in /root, a mkdtemp folder). These tests put each
 * below such a parent and check where switchboard puts things instead. They run as root only,
 * as CI does; a normal user's server runs as that user and never needs any of this.
 */
import { execFileSync } from 'node:child_process';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPool, sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_LOCATION_FILE } from '../../src/postgres/cluster-placement.ts';
import { PostgresUnreachableError } from '../../src/postgres/embedded-postgres-error.ts';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
} from '../../src/postgres/embedded-postgres.ts';
import { bundledInstall } from '../../src/postgres/postgres-install.ts';
import { silentLogger } from '../support/database.ts';

const asRoot = process.getuid?.() === 0;
const idOf = (flag: '-u' | '-g'): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());

async function withPool<T>(
  server: EmbeddedPostgres,
  work: (pool: Awaited<ReturnType<typeof createPool>>) => Promise<T>,
) {
  const pool = await createPool(server.url, { maximumPoolSize: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}

/** Starts a server, runs the work against it, and always stops it again. */
async function whileRunning<T>(
  options: Omit<EmbeddedPostgresOptions, 'logger' | 'durable'>,
  work: (server: EmbeddedPostgres) => Promise<T>,
): Promise<T> {
  const server = await startEmbeddedPostgres({ ...options, logger: silentLogger, durable: false });
  try {
    return await work(server);
  } finally {
    await server.stop();
  }
}

const COPY_TIMEOUT_MS = 120_000;
describe.runIf(asRoot)('embedded PostgreSQL as root, below a mode 0700 parent', () => {
  /** Private like /root: the postgres user cannot get through it. */
  let closed: string;
  /** Reachable like /var/lib; the system directory is made inside it. */
  let open: string;
  let systemDir: string;

  beforeAll(async () => {
    closed = await mkdtemp(path.join(tmpdir(), 'sb-closed-'));
    expect((await stat(closed)).mode & 0o777).toBe(0o700);
    open = await mkdtemp(path.join(tmpdir(), 'sb-open-'));
    await chmod(open, 0o755);
    systemDir = path.join(open, 'var-lib-switchboard');
  });
  /** A copy of the bundled binaries below the closed folder, where the postgres user cannot run them. */
  const privateInstall = async (name: string): Promise<string> => {
    const dir = path.join(closed, name);
    await cp((await bundledInstall()).dir, dir, { recursive: true, verbatimSymlinks: true });
    return dir;
  };

  afterAll(async () => {
    await rm(closed, { recursive: true, force: true });
    await rm(open, { recursive: true, force: true });
  });

  it('places the cluster where the postgres user reaches it, records the place, and finds it on the next start', async () => {
    const dataDir = path.join(closed, 'data');
    const clusterDir = await whileRunning({ dataDir, systemDir }, async (first) => {
      expect(first.clusterDir.startsWith(path.join(systemDir, 'clusters') + path.sep)).toBe(true);
      expect((await readFile(path.join(dataDir, CLUSTER_LOCATION_FILE), 'utf8')).trim()).toBe(first.clusterDir);
      const cluster = await stat(first.clusterDir);
      expect(cluster.uid).toBe(idOf('-u'));
      expect(cluster.mode & 0o777).toBe(0o700);
      // The folders leading to it are root's, searchable but not listable by others.
      expect((await stat(path.dirname(first.clusterDir))).mode & 0o777).toBe(0o711);
      await withPool(first, (pool) => pool.query(sql.unsafe`CREATE TABLE kept AS SELECT 42 AS answer`));
      return first.clusterDir;
    });
    await whileRunning({ dataDir, systemDir }, async (second) => {
      expect(second.clusterDir).toBe(clusterDir);
      expect(await withPool(second, (pool) => pool.oneFirst(sql.unsafe`SELECT answer FROM kept`))).toBe(42);
    });
  });

  it('judges a symlinked data directory by where it really is', async () => {
    const real = path.join(closed, 'real-data');
    await mkdir(real);
    const link = path.join(open, 'linked-data');
    await symlink(real, link);
    await whileRunning({ dataDir: link, systemDir }, async (server) => {
      expect(server.clusterDir.startsWith(path.join(systemDir, 'clusters') + path.sep)).toBe(true);
      expect((await readFile(path.join(real, CLUSTER_LOCATION_FILE), 'utf8')).trim()).toBe(server.clusterDir);
    });
  });

  // Copying the PostgreSQL binaries (and starting from the copy) takes 15 s on a quiet 2-core
  // machine and has taken over 30 s beside a loaded test run.
  it(
    'copies binaries it cannot reach once into a root-owned cache only the postgres user may run, and reuses it',
    async () => {
      const installDir = await privateInstall('postgresql');
      const dataDir = path.join(open, 'data-with-copied-binaries');
      const copied = await whileRunning({ dataDir, systemDir, installDir }, async (first) => {
        const caches = (await readdir(systemDir)).filter((name) => name.startsWith('switchboard-postgres-'));
        expect(caches).toHaveLength(1);
        const cache = path.join(systemDir, caches[0] ?? '');
        // The server runs the copy, and its cluster stayed in the reachable data directory.
        expect(await readlink(`/proc/${first.pid}/exe`)).toBe(path.join(cache, 'bin', 'postgres'));
        expect(first.clusterDir).toBe(path.join(dataDir, 'postgres'));
        // Every file and folder in the copy: root's, group postgres, nothing for anyone else.
        for (const relative of ['.', ...(await readdir(cache, { recursive: true }))]) {
          const info = await lstat(path.join(cache, relative));
          if (info.isSymbolicLink()) continue;
          expect({
            relative,
            uid: info.uid,
            gid: info.gid,
            other: info.mode & 0o007,
            group: info.mode & 0o020,
          }).toEqual({
            relative,
            uid: 0,
            gid: idOf('-g'),
            other: 0,
            group: 0,
          });
        }
        expect((await stat(path.join(cache, 'bin', 'postgres'))).mode & 0o777).toBe(0o750);
        return { file: path.join(cache, 'bin', 'postgres'), info: await stat(path.join(cache, 'bin', 'postgres')) };
      });
      await whileRunning({ dataDir, systemDir, installDir }, async (second) => {
        expect(await readlink(`/proc/${second.pid}/exe`)).toBe(copied.file);
        const reused = await stat(copied.file);
        expect({ ino: reused.ino, mtimeMs: reused.mtimeMs }).toEqual({
          ino: copied.info.ino,
          mtimeMs: copied.info.mtimeMs,
        });
      });
    },
    COPY_TIMEOUT_MS,
  );

  it(
    'keeps the copy beside the data directory when the system directory is out of reach',
    async () => {
      const installDir = await privateInstall('postgresql-2');
      const beside = path.join(open, 'beside');
      await mkdir(beside, { mode: 0o755 });
      const dataDir = path.join(beside, 'data');
      await whileRunning({ dataDir, systemDir: path.join(closed, 'system'), installDir }, async (server) => {
        const [cache] = (await readdir(beside)).filter((name) => name.startsWith('switchboard-postgres-'));
        expect(cache).toBeDefined();
        expect(await readlink(`/proc/${server.pid}/exe`)).toBe(path.join(beside, cache ?? '', 'bin', 'postgres'));
      });
    },
    COPY_TIMEOUT_MS,
  );

  it('names what is unreachable and the ways out, having spawned nothing, when no place can be found', async () => {
    const dataDir = path.join(closed, 'data-nowhere');
    // Binaries it reaches wherever this repository lives, so that the cluster is what fails.
    const installDir = path.join(open, 'postgresql-reachable');
    await cp((await bundledInstall()).dir, installDir, { recursive: true, verbatimSymlinks: true });
    const start = startEmbeddedPostgres({
      dataDir,
      logger: silentLogger,
      durable: false,
      systemDir: path.join(closed, 'system-nowhere'),
      installDir,
    });
    await expect(start).rejects.toBeInstanceOf(PostgresUnreachableError);
    await expect(start).rejects.toThrow(
      new RegExp(
        `cannot reach the data directory ${dataDir} \\(${closed} \\(mode 0700, owner uid 0\\) shuts out the postgres user\\).*` +
          'SWITCHBOARD_DATA_DIR=.*run switchboard as a normal user',
      ),
    );
    // No password, no record, no initdb staging: it stopped before doing anything.
    expect(await readdir(dataDir)).toEqual([]);
  });
});
