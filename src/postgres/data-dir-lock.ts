/**
 * One switchboard per data directory. PostgreSQL's own postmaster.pid already stops a second
 * server from touching the files, so data cannot be corrupted either way; this lock exists to give
 * the second switchboard a clear message naming the owner instead of a PostgreSQL start failure.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { link, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { InternalError } from '../errors/internal-error.ts';

export const LOCK_FILE_NAME = 'switchboard.lock';

export class DataDirInUseError extends InternalError {
  readonly code = 'SB_ERR_DATA_DIR_IN_USE';
  readonly ownerPid: number | null;

  constructor(message: string, ownerPid: number | null) {
    super(message);
    this.ownerPid = ownerPid;
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

const lockContent = z.object({ pid: z.number().int().positive(), host: z.string(), nonce: z.string() });

/** True when a process with this pid exists (EPERM means it exists but belongs to someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EPERM';
  }
}

export async function acquireDataDirLock(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, LOCK_FILE_NAME);
  const nonce = randomBytes(8).toString('hex');
  const content = JSON.stringify({ pid: process.pid, host: hostname(), nonce });

  // The content is written to a private file first and hard-linked into place, so the lock
  // appears atomically with its content: a rival never reads a half-written (empty) lock and
  // mistakes it for a stale one.
  const staging = `${file}.${process.pid}.${nonce}`;
  await writeFile(staging, `${content}\n`, { mode: 0o644 });
  try {
    return await takeLock(dataDir, file, staging, nonce);
  } finally {
    await rm(staging, { force: true });
  }
}

async function takeLock(dataDir: string, file: string, staging: string, nonce: string): Promise<DataDirLock> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      await link(staging, file);
      return {
        file,
        release: async () => {
          // Only remove the file if it is still ours (a stale-lock takeover may have replaced it).
          const current = await readLock(file);
          if (current?.nonce === nonce) await rm(file, { force: true });
        },
      };
    } catch (error) {
      if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
    }

    const owner = await readLock(file);
    if (owner && (owner.host !== hostname() || isProcessAlive(owner.pid))) {
      const where = owner.host === hostname() ? `pid ${owner.pid}` : `pid ${owner.pid} on host ${owner.host}`;
      throw new DataDirInUseError(
        `data directory ${dataDir} is in use by another switchboard (${where}). ` +
          'Stop that instance, or point SWITCHBOARD_DATA_DIR at another directory. ' +
          `If no switchboard is running there, delete ${file}.`,
        owner.pid,
      );
    }
    // The owner died without cleaning up (or the file is unreadable junk): take the lock over.
    await rm(file, { force: true });
  }
  throw new DataDirInUseError(`could not lock data directory ${dataDir}: another process keeps taking ${file}`, null);
}

async function readLock(file: string): Promise<z.infer<typeof lockContent> | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const parsed = lockContent.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
