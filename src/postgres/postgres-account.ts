/**
 * PostgreSQL refuses to run as root, so a switchboard started by root runs its embedded server as
 * the `postgres` user. That user then needs to reach the binaries and the cluster directory; a
 * project or data directory below a mode 0700 parent (root's home, a mkdtemp directory) denies it.
 * This module names the account and answers "can it reach this path?" without running anything.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, realpath, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { EmbeddedPostgresError } from './embedded-postgres-error.ts';

const run = promisify(execFile);

const POSTGRES_ACCOUNT_NAME = 'postgres';

/** The account PostgreSQL runs as when switchboard runs as root. */
export interface PostgresAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

const isRoot = (): boolean => process.platform !== 'win32' && userInfo().uid === 0;

async function idOf(name: string): Promise<{ uid: number; gid: number } | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null;
  }
}

/**
 * The postgres account when running as root (created as a system account, with no login and no
 * home, if the machine has none); null when switchboard is not root and PostgreSQL runs as us.
 */
export async function postgresAccount(): Promise<PostgresAccount | null> {
  if (!isRoot()) return null;
  const existing = await idOf(POSTGRES_ACCOUNT_NAME);
  if (existing) return { name: POSTGRES_ACCOUNT_NAME, ...existing };
  try {
    // Exit code 9: the group already exists, which is fine.
    await run('groupadd', ['--system', POSTGRES_ACCOUNT_NAME]).catch((error: unknown) => {
      if (!(error instanceof Error && 'code' in error && error.code === 9)) throw error;
    });
    await run('useradd', [
      '--system',
      '--gid',
      POSTGRES_ACCOUNT_NAME,
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      POSTGRES_ACCOUNT_NAME,
    ]);
  } catch (error) {
    throw new EmbeddedPostgresError(
      `running as root, so the embedded PostgreSQL must run as the ${POSTGRES_ACCOUNT_NAME} user, which does not exist ` +
        `and could not be created (${error instanceof Error ? error.message.trim() : String(error)}). ` +
        `Create it (useradd --system ${POSTGRES_ACCOUNT_NAME}), run switchboard as a normal user, or set DATABASE_URL.`,
    );
  }
  const created = await idOf(POSTGRES_ACCOUNT_NAME);
  if (!created) throw new EmbeddedPostgresError(`created the ${POSTGRES_ACCOUNT_NAME} user but cannot look it up`);
  return { name: POSTGRES_ACCOUNT_NAME, ...created };
}

export const SEARCH = 0o1;

/** The permission bits (rwx as 0-7) that apply to this account for a file with these owner ids. */
function bitsFor(account: PostgresAccount, file: { uid: number; gid: number; mode: number }): number {
  if (file.uid === account.uid) return (file.mode >> 6) & 0o7;
  // Node drops supplementary groups when it spawns with a uid, so only the primary group counts.
  if (file.gid === account.gid) return (file.mode >> 3) & 0o7;
  return file.mode & 0o7;
}

export interface Blocked {
  /** The first path the account cannot get through or use. */
  readonly path: string;
  readonly mode: number;
  readonly owner: number;
}

/**
 * The first component on the way to `target` (symlinks resolved, as PostgreSQL is given real
 * paths) that the account cannot search, or `target` itself when it lacks `need` there; null when
 * the account gets through. Read from the mode bits: an ACL that grants more only makes switchboard
 * copy or relocate when it did not have to, and one that denies more is caught when the spawn fails.
 */
export async function firstBlocked(account: PostgresAccount, target: string, need: number): Promise<Blocked | null> {
  const real = await realpath(target);
  const parts = real.split(path.sep).filter((part) => part !== '');
  let current = path.parse(real).root;
  const chain = [current, ...parts.map((part) => (current = path.join(current, part)))];
  for (const [index, component] of chain.entries()) {
    const info = await stat(component);
    const wanted = index === chain.length - 1 ? need : SEARCH;
    if ((bitsFor(account, info) & wanted) !== wanted)
      return { path: component, mode: info.mode & 0o7777, owner: info.uid };
  }
  return null;
}

export function describeBlocked(account: PostgresAccount, blocked: Blocked): string {
  return `${blocked.path} (mode ${blocked.mode.toString(8).padStart(4, '0')}, owner uid ${blocked.owner}) shuts out the ${account.name} user`;
}

/**
 * A folder root keeps things in for the postgres user: root owns it, and no one else can rename or
 * replace what is inside (not writable by others, or sticky like /tmp). Created (mode 0711:
 * searchable, not listable) when missing. Returns what is wrong with it, or null.
 */
export async function ensureRootFolder(dir: string): Promise<string | null> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o711 });
    const info = await lstat(dir);
    const safe = info.isDirectory() && info.uid === 0 && ((info.mode & 0o022) === 0 || (info.mode & 0o1000) !== 0);
    return safe ? null : `${dir} is not a root-owned folder that only root can write`;
  } catch (error) {
    return `${dir}: ${error instanceof Error ? error.message : String(error)}`;
  }
}
