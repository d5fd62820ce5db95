/**
 * Where a data directory's embedded cluster is, how much room it takes, and removing it
 * (`switchboard data info | rm`). Running as root, a cluster may live under
 * /var/lib/switchboard/clusters/<id>/ (placeCluster in cluster-placement.ts) and would outlive
 * its project directory; this is how it is found and removed.
 */
import { lstat, readdir, readFile, realpath, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { acquireDataDirLock, DataDirInUseError, isProcessAlive, type DataDirLock } from './data-dir-lock.ts';
import { CLUSTER_DIR, CLUSTER_LOCATION_FILE, isOwnClusterId } from './cluster-placement.ts';
import { EmbeddedPostgresError } from './embedded-postgres-error.ts';
import { PASSWORD_FILE, RUNNING_RECORD_FILE } from './running-record.ts';

export interface ClusterPlace {
  /** The cluster's folder (whether or not it exists yet). */
  clusterDir: string;
  /** Recorded in postgres.location: the cluster lives outside the data directory. */
  relocated: boolean;
  /** For a relocated cluster, the folder made for it (clusters/<id>), removed with it. */
  home: string | null;
}

export async function clusterPlace(dataDir: string): Promise<ClusterPlace> {
  const recorded = await readFile(path.join(dataDir, CLUSTER_LOCATION_FILE), 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
  if (recorded === null || recorded === '') {
    return { clusterDir: path.join(dataDir, CLUSTER_DIR), relocated: false, home: null };
  }
  if (!path.isAbsolute(recorded)) return { clusterDir: recorded, relocated: true, home: null };
  // Resolved (`..` and links) before its names are checked: `<P>/clusters/../postgres` has the
  // right names, and its clusters/<id> folder was <P> itself.
  const clusterDir = await realpath(recorded).catch(() => path.resolve(recorded));
  const home = path.dirname(clusterDir);
  // Only a folder of the shape placeCluster makes (…/clusters/<id>/postgres), with an id made for
  // this data directory, is removed whole.
  const shaped =
    path.basename(clusterDir) === CLUSTER_DIR &&
    path.basename(path.dirname(home)) === 'clusters' &&
    (await isOwnClusterId(dataDir, path.basename(home)));
  return { clusterDir, relocated: true, home: shaped ? home : null };
}

/**
 * The lock of a cluster placed outside its data directory, in its clusters/<id> folder: the server
 * running on it holds it besides the data directory's, and `data rm` takes it before removing the
 * folder, so a cluster in use is never removed, whichever data directory's record names it.
 */
export async function lockCluster(home: string): Promise<DataDirLock> {
  try {
    return await acquireDataDirLock(home);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
    throw new DataDirInUseError(
      `the embedded cluster in ${home} is in use by a running switchboard` +
        `${error.ownerPid === null ? '' : ` (pid ${error.ownerPid})`}; stop it first`,
      error.ownerPid,
    );
  }
}

/** Refuses while a postmaster runs on the cluster (one a killed switchboard left running, say). */
async function refuseLivePostmaster(clusterDir: string): Promise<void> {
  const text = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '');
  const pid = Number(text.split('\n', 1)[0]);
  if (Number.isInteger(pid) && pid > 0 && isProcessAlive(pid)) {
    throw new DataDirInUseError(
      `PostgreSQL (pid ${pid}) is running on ${clusterDir}; stop it (kill -INT ${pid}) before removing the cluster`,
      pid,
    );
  }
}

/**
 * Bytes on disk below a path (like du), not following links; null when it does not exist. `skip`
 * is a path below it left out (the cluster, when the data directory's size is made of two walks'
 * results). A folder's entries are read at once, not one after another: a cluster is a thousand
 * files and more, and one lstat at a time took most of a second.
 */
export async function diskUsage(target: string, skip?: string): Promise<number | null> {
  let stats;
  try {
    stats = await lstat(target);
  } catch {
    return null;
  }
  if (!stats.isDirectory()) return stats.blocks * 512;
  const entries = await readdir(target).catch((): string[] => []);
  const sizes = await Promise.all(
    entries.map(async (entry) => {
      const inner = path.join(target, entry);
      return inner === skip ? 0 : ((await diskUsage(inner, skip)) ?? 0);
    }),
  );
  return sizes.reduce((sum, size) => sum + size, stats.blocks * 512);
}

/** The files of the data directory that belong to the cluster (its password and records). */
const CLUSTER_FILES = [CLUSTER_LOCATION_FILE, PASSWORD_FILE, RUNNING_RECORD_FILE];

/**
 * Removes the data directory's embedded cluster wherever it lives, with its password and
 * records, and the API token files (their hashes were in that cluster). Takes the data
 * directory's lock first, then a relocated cluster's own (lockCluster), so it refuses
 * (DataDirInUseError) while a switchboard runs on either, or a postmaster on the cluster.
 * Returns what was removed.
 */
export async function removeCluster(dataDir: string, extraFiles: readonly string[] = []): Promise<string[]> {
  const lock = await acquireDataDirLock(dataDir);
  const removed: string[] = [];
  try {
    const place = await clusterPlace(dataDir);
    if (place.relocated && place.home === null) {
      throw new EmbeddedPostgresError(
        `${path.join(dataDir, CLUSTER_LOCATION_FILE)} names ${JSON.stringify(place.clusterDir)}, which is not a cluster ` +
          'folder switchboard made for this data directory (…/clusters/<id>/postgres); remove it yourself if it is one',
      );
    }
    const clusterLock = place.home === null ? null : await lockCluster(place.home);
    try {
      await refuseLivePostmaster(place.clusterDir);
      const folder = place.home ?? place.clusterDir;
      if ((await diskUsage(folder)) !== null) {
        await rm(folder, { recursive: true, force: true });
        removed.push(folder);
      }
    } finally {
      await clusterLock?.release();
    }
    for (const name of [...CLUSTER_FILES, ...extraFiles]) {
      const file = path.join(dataDir, name);
      if ((await diskUsage(file)) === null) continue;
      await rm(file, { force: true });
      removed.push(file);
    }
  } finally {
    await lock.release();
  }
  // The data directory goes too when nothing else is left in it (no config or file of the user's).
  await rmdir(dataDir).catch(() => undefined);
  return removed;
}
