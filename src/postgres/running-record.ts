/**
 * Where a running switchboard's embedded PostgreSQL can be reached, for the other commands on the
 * same data directory (`switchboard token …`): one process owns the cluster, the others connect
 * to it as clients instead of starting a second server on the same files.
 *
 * The record is <dataDir>/postgres.running: the owner's pid, the port and the database, never the
 * password (that stays in postgres.password). It is written atomically (a private file renamed
 * into place), readable by the owner only, and removed when the server stops or the process
 * exits. A record left by a killed process names a dead pid and is ignored.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { isProcessAlive } from './data-dir-lock.ts';
import { SUPERUSER } from './postgres-processes.ts';

export const RUNNING_RECORD_FILE = 'postgres.running';
export const PASSWORD_FILE = 'postgres.password';

const recordContent = z.object({
  pid: z.number().int().positive(),
  port: z.number().int().positive(),
  database: z.string().min(1),
});

export interface RunningRecord {
  /** Removes the record, if it is still this process's. Idempotent. */
  remove(): Promise<void>;
}

export interface RunningEmbeddedPostgres {
  /** postgres:// URL, password included: never log it. */
  url: string;
  /** The switchboard process that owns the cluster. */
  pid: number;
}

export function connectionUrl(port: number, password: string, database: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

export async function writeRunningRecord(
  dataDir: string,
  server: { port: number; database: string },
): Promise<RunningRecord> {
  const file = path.join(dataDir, RUNNING_RECORD_FILE);
  const content = JSON.stringify({ pid: process.pid, port: server.port, database: server.database });
  const staged = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(staged, `${content}\n`, { mode: 0o600, flag: 'wx' });
  await rename(staged, file);
  const ours = (): boolean => {
    try {
      return recordContent.safeParse(JSON.parse(readFileSync(file, 'utf8'))).data?.pid === process.pid;
    } catch {
      return false;
    }
  };
  // SIGKILL skips this; a reader then finds a dead pid and ignores the record.
  const onExit = (): void => {
    if (ours()) rmSync(file, { force: true });
  };
  process.once('exit', onExit);
  let removed = false;
  return {
    remove: async () => {
      if (removed) return;
      removed = true;
      process.off('exit', onExit);
      if (ours()) await rm(file, { force: true });
    },
  };
}

/** The embedded PostgreSQL a live switchboard runs on this data directory, or null. */
export async function findRunningEmbedded(dataDir: string): Promise<RunningEmbeddedPostgres | null> {
  let record: z.infer<typeof recordContent> | undefined;
  try {
    record = recordContent.safeParse(JSON.parse(await readFile(path.join(dataDir, RUNNING_RECORD_FILE), 'utf8'))).data;
  } catch {
    return null;
  }
  if (record === undefined || record.pid === process.pid || !isProcessAlive(record.pid)) return null;
  let password: string;
  try {
    password = (await readFile(path.join(dataDir, PASSWORD_FILE), 'utf8')).trim();
  } catch {
    return null;
  }
  if (password === '') return null;
  return { url: connectionUrl(record.port, password, record.database), pid: record.pid };
}
