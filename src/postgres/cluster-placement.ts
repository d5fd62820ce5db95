/**
 * Where the embedded server's binaries and cluster live. Usually the bundled installation and
 * <dataDir>/postgres; running as root, PostgreSQL runs as the postgres user, and when a mode 0700
 * parent (root's home, a mkdtemp folder) shuts it out, the binaries are copied once to a
 * root-owned cache it can reach and the cluster is placed under /var/lib/switchboard, its place
 * recorded in <dataDir>/postgres.location. All of it is decided before anything is spawned.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, readFile, realpath, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger.ts';
import { pathExists } from '../shared/path-exists.ts';
import { EmbeddedPostgresError, PostgresUnreachableError } from './embedded-postgres-error.ts';
import { describeBlocked, ensureRootFolder, firstBlocked, SEARCH, type PostgresAccount } from './postgres-account.ts';
import { reachableInstall, type PostgresInstall } from './postgres-install.ts';

/** The cluster's folder in the data directory (unless it was placed elsewhere, see placeCluster). */
export const CLUSTER_DIR = 'postgres';
/** Written in the data dir when the cluster lives elsewhere: that cluster's absolute path. */
export const CLUSTER_LOCATION_FILE = 'postgres.location';
export const DEFAULT_SYSTEM_DIR = '/var/lib/switchboard';

export interface Placement {
  account: PostgresAccount | null;
  dataDir: string;
  systemDir: string;
  logger: Logger;
}

/** The two ways out, for every error that says the postgres user cannot reach something. */
const WAYS_OUT =
  'Set SWITCHBOARD_DATA_DIR to a directory outside any mode 0700 parent (for example ' +
  'SWITCHBOARD_DATA_DIR=/var/lib/switchboard/data), or run switchboard as a normal user ' +
  '(or set DATABASE_URL to use a PostgreSQL server of your own).';

/**
 * The binaries, or a copy the postgres user can run: kept in the system directory, else beside
 * the data directory, so one copy serves every data directory on the machine.
 */
export async function placeInstall(found: PostgresInstall, placement: Placement): Promise<PostgresInstall> {
  const { account } = placement;
  if (!account) return found;
  const result = await reachableInstall(found, {
    account,
    cacheRoots: [placement.systemDir, path.dirname(placement.dataDir)],
    logger: placement.logger,
  });
  if ('install' in result) return result.install;
  throw new PostgresUnreachableError(
    `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach ${result.unreachable}; ` +
      `and no copy it can reach could be made (${result.attempts.join('; ')}). ${WAYS_OUT}`,
  );
}

/**
 * Where the cluster lives: <dataDir>/postgres, unless switchboard runs as root and the postgres
 * user cannot get into the data directory. The cluster then goes to
 * <systemDir>/clusters/<id>/postgres, and that place is recorded in the data directory before
 * initdb runs, so every later start (and a start after a crash mid-initdb) finds it.
 */
export async function placeCluster(placement: Placement): Promise<string> {
  const { account, dataDir, logger } = placement;
  const recordFile = path.join(dataDir, CLUSTER_LOCATION_FILE);
  const recorded = await readFile(recordFile, 'utf8').then(
    (text) => text.trim(),
    () => null,
  );
  if (recorded !== null) {
    if (!path.isAbsolute(recorded) || !(await pathExists(path.dirname(recorded)))) {
      throw new EmbeddedPostgresError(
        `${recordFile} says the embedded cluster is in ${JSON.stringify(recorded)}, which does not exist; ` +
          `restore it, or remove ${recordFile} to start with a new, empty cluster`,
      );
    }
    return recorded;
  }
  if (!account) return path.join(dataDir, CLUSTER_DIR);
  // PostgreSQL is given the real path, so the folders a symlinked data dir points into are checked.
  const realDataDir = await realpath(dataDir);
  const inside = path.join(realDataDir, CLUSTER_DIR);
  const blocked = await firstBlocked(account, path.dirname(realDataDir), SEARCH);
  if (!blocked) {
    await ensureSearchable(realDataDir, logger);
    return inside;
  }
  const reason = describeBlocked(account, blocked);
  if (await pathExists(inside)) {
    throw new PostgresUnreachableError(
      `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach the cluster in ` +
        `${inside}: ${reason}. Make ${blocked.path} searchable for it (chmod o+x), or move the data directory. ${WAYS_OUT}`,
    );
  }
  const clusters = path.join(placement.systemDir, 'clusters');
  const home = path.join(clusters, clusterId(realDataDir));
  const problem = (await ensureRootFolder(clusters)) ?? (await ensureRootFolder(home));
  const homeBlocked = problem === null ? await firstBlocked(account, home, SEARCH) : null;
  if (problem !== null || homeBlocked !== null) {
    throw new PostgresUnreachableError(
      `running as root, the embedded PostgreSQL runs as the ${account.name} user, which cannot reach the data ` +
        `directory ${dataDir} (${reason}), and no cluster directory it can reach could be made in ` +
        `${placement.systemDir} (${problem ?? describeBlocked(account, homeBlocked as NonNullable<typeof homeBlocked>)}). ${WAYS_OUT}`,
    );
  }
  const clusterDir = path.join(home, CLUSTER_DIR);
  const staged = `${recordFile}.${randomBytes(4).toString('hex')}`;
  await writeFile(staged, `${clusterDir}\n`, { mode: 0o600 });
  await rename(staged, recordFile);
  logger.info(
    { dataDir, clusterDir, reason },
    'the postgres user cannot reach the data directory; the cluster lives elsewhere',
  );
  return clusterDir;
}

/** The part of a cluster id that names its data directory (a hash of the real path). */
function clusterOwner(realDataDir: string): string {
  return createHash('sha256').update(realDataDir).digest('hex').slice(0, 12);
}

/**
 * Names the data directory it belongs to (hashed), and is unique even if that is reused.
 * @internal outside src/, only tests or benches use it
 */
export function clusterId(realDataDir: string): string {
  return `${clusterOwner(realDataDir)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Whether a folder name under clusters/ is an id placeCluster made for this data directory. What a
 * postgres.location names is only ever removed when it is: a location edited to name another
 * project's cluster names another owner.
 */
export async function isOwnClusterId(dataDir: string, id: string): Promise<boolean> {
  const real = await realpath(dataDir).catch(() => path.resolve(dataDir));
  return new RegExp(`^${clusterOwner(real)}-[0-9a-f]{8}$`).test(id);
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk into the data
 * directory to reach its cluster. Adding the search bit exposes no file names or contents.
 */
async function ensureSearchable(dataDir: string, logger: Logger): Promise<void> {
  const { mode } = await stat(dataDir);
  if ((mode & 0o001) === 0) {
    await chmod(dataDir, (mode & 0o7777) | 0o011);
    logger.info({ dataDir }, 'made the data directory traversable for the postgres user');
  }
}
