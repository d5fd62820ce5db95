/**
 * Where a data directory's embedded cluster is, how much room it takes, and removing it
 * (`switchboard data info | rm`). Running as root, a cluster may live under
 * /var/lib/switchboard/clusters/<id>/ (placeCluster in cluster-placement.ts) and would outlive
 * its project directory; this is how it is found and removed.
 */
import { lstat, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { acquireDataDirLock } from './data-dir-lock.ts';
import { CLUSTER_DIR, CLUSTER_LOCATION_FILE } from './cluster-placement.ts';
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
  // Only a folder of the shape placeCluster makes (…/clusters/<id>/postgres) is removed whole.
  const home = path.dirname(recorded);
  const shaped =
    path.isAbsolute(recorded) &&
    path.basename(recorded) === CLUSTER_DIR &&
    path.basename(path.dirname(home)) === 'clusters';
  return { clusterDir: recorded, relocated: true, home: shaped ? home : null };
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
 * directory's lock first, so it refuses (DataDirInUseError) while a switchboard runs on it.
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
          'folder switchboard made (…/clusters/<id>/postgres); remove it yourself if it is one',
      );
    }
    const folder = place.home ?? place.clusterDir;
    if ((await diskUsage(folder)) !== null) {
      await rm(folder, { recursive: true, force: true });
      removed.push(folder);
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
