/**
 * Where `switchboard listen` stopped, one file per server and filter set, so a restarted listen
 * resumes without losing or repeating events. The file is replaced atomically (write a sibling,
 * fsync, rename), so a crash mid-write leaves the previous checkpoint, never half of one.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ListenCheckpoint } from '../../generated/types.ts';
import { validateListenCheckpoint } from '../../generated/validators.js';
import { describeSchemaErrors } from '../errors/schema-errors.ts';

export interface CheckpointKey {
  server: string;
  providers: readonly string[];
  eventTypes: readonly string[];
}

const sorted = (values: readonly string[]): string[] => [...new Set(values)].sort();

/** The checkpoint's file: $XDG_STATE_HOME/switchboard/listen-<hash>.json, XDG's default state dir otherwise. */
export function checkpointPath(key: CheckpointKey, env: NodeJS.ProcessEnv, home: string): string {
  // The XDG spec ignores a relative XDG_STATE_HOME.
  const configured = env.XDG_STATE_HOME;
  const stateHome =
    configured !== undefined && path.isAbsolute(configured) ? configured : path.join(home, '.local', 'state');
  const hash = createHash('sha256')
    .update(JSON.stringify([key.server, sorted(key.providers), sorted(key.eventTypes)]))
    .digest('hex')
    .slice(0, 16);
  return path.join(stateHome, 'switchboard', `listen-${hash}.json`);
}

export function newCheckpoint(key: CheckpointKey): ListenCheckpoint {
  return {
    server: key.server,
    providers: sorted(key.providers),
    event_types: sorted(key.eventTypes),
    last_event_id: null,
    last_received_at: null,
    updated_at: new Date().toISOString(),
  };
}

export type CheckpointRead =
  { kind: 'absent' } | { kind: 'found'; checkpoint: ListenCheckpoint } | { kind: 'unreadable'; reason: string };

export async function readCheckpoint(file: string): Promise<CheckpointRead> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err: unknown) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'unreadable', reason: err instanceof Error ? err.message : String(err) };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: 'unreadable', reason: 'not JSON' };
  }
  if (!validateListenCheckpoint(parsed))
    return { kind: 'unreadable', reason: describeSchemaErrors(validateListenCheckpoint.errors, 'checkpoint') };
  return { kind: 'found', checkpoint: parsed };
}

export async function writeCheckpoint(file: string, checkpoint: ListenCheckpoint): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(checkpoint, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err: unknown) {
    await rm(temp, { force: true });
    throw err;
  }
}
