import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointPath, newCheckpoint, readCheckpoint, writeCheckpoint } from '../../src/listen/checkpoint.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const key = { server: 'https://hooks.example.com/', providers: ['github', 'stripe'], eventTypes: ['push'] };

describe('listen checkpoint', () => {
  it('is one file per server and filter set, under XDG_STATE_HOME or ~/.local/state', () => {
    const path = checkpointPath(key, { XDG_STATE_HOME: '/state' }, '/home/dev');
    expect(path).toMatch(/^\/state\/switchboard\/listen-[0-9a-f]{16}\.json$/);
    expect(checkpointPath({ ...key, providers: ['stripe', 'github'] }, { XDG_STATE_HOME: '/state' }, '/h')).toBe(path);
    expect(checkpointPath({ ...key, providers: ['github'] }, { XDG_STATE_HOME: '/state' }, '/h')).not.toBe(path);
    expect(
      checkpointPath({ ...key, server: 'https://other.example.com/' }, { XDG_STATE_HOME: '/state' }, '/h'),
    ).not.toBe(path);
    expect(checkpointPath(key, {}, '/home/dev')).toMatch(/^\/home\/dev\/\.local\/state\/switchboard\/listen-/);
    // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
    expect(checkpointPath(key, { XDG_STATE_HOME: 'rel' }, '/home/dev')).toMatch(/^\/home\/dev\/\.local\/state\//);
  });

  it('is written atomically with mode 0600 and read back; a damaged one is reported, not trusted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-checkpoint-'));
    dirs.push(dir);
    const file = checkpointPath(key, { XDG_STATE_HOME: dir }, '/nowhere');
    expect(await readCheckpoint(file)).toEqual({ kind: 'absent' });
    const saved = { ...newCheckpoint(key), last_event_id: '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e' };
    for (let i = 0; i < 5; i++) await writeCheckpoint(file, saved);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(join(dir, 'switchboard'))).toHaveLength(1);
    expect(await readCheckpoint(file)).toEqual({ kind: 'found', checkpoint: saved });
    await writeFile(file, '{"server":');
    expect(await readCheckpoint(file)).toMatchObject({ kind: 'unreadable' });
    await writeFile(file, JSON.stringify({ ...saved, last_event_id: 'not-an-id' }));
    expect(await readCheckpoint(file)).toMatchObject({ kind: 'unreadable' });
  });
});
