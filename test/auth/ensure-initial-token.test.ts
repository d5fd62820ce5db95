import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ensureInitialToken } from '../../src/auth/ensure-initial-token.ts';
import { TokenService } from '../../src/auth/token-service.ts';
import type { TokenRepository } from '../../src/store/records/token-repository.ts';
import { useTokenDatabase } from './token-database.ts';

let tokens: TokenRepository;
let dataDir: string;
useTokenDatabase((repository) => (tokens = repository), { emptied: true });

beforeEach(async () => {
  dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'switchboard-token-')), 'data');
  return () => rm(path.dirname(dataDir), { recursive: true, force: true });
});

describe('ensureInitialToken', () => {
  it('creates "default" on first start, returns it once and writes it to <data dir>/token with mode 0600', async () => {
    const first = await ensureInitialToken({ tokens, dataDir, envToken: undefined });
    expect(first.created).toBe(true);
    expect(first.path).toBe(path.join(dataDir, 'token'));
    expect(first.token).toMatch(/^sbt_/);
    expect(await readFile(first.path, 'utf8')).toBe(`${first.token}\n`);
    expect((await stat(first.path)).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o077).toBe(0);
    const service = new TokenService({ tokens });
    expect(await service.authenticate(first.token ?? '')).toMatchObject({ name: 'default' });

    const second = await ensureInitialToken({ tokens, dataDir, envToken: undefined });
    expect(second).toEqual({ created: false, path: first.path });
    expect(await readFile(first.path, 'utf8')).toBe(`${first.token}\n`);
    expect((await tokens.list()).map((t) => t.name)).toEqual(['default']);
  });

  it('creates nothing when SWITCHBOARD_TOKEN is set', async () => {
    const result = await ensureInitialToken({ tokens, dataDir, envToken: 'from-the-environment' });
    expect(result.created).toBe(false);
    expect(result.token).toBeUndefined();
    await expect(stat(result.path)).rejects.toThrow(/ENOENT/);
    expect(await tokens.count()).toBe(0);
  });

  it('creates nothing when a managed token exists, even a revoked one', async () => {
    await tokens.create('ci');
    await tokens.revoke('ci');
    const result = await ensureInitialToken({ tokens, dataDir, envToken: '' });
    expect(result.created).toBe(false);
    expect(await tokens.count()).toBe(0);
  });

  it('replaces a stale token file readable by others instead of writing into it', async () => {
    await mkdir(dataDir, { recursive: true });
    const file = path.join(dataDir, 'token');
    await writeFile(file, 'old\n', { mode: 0o644 });
    const result = await ensureInitialToken({ tokens, dataDir });
    expect(result.created).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).toBe(`${result.token}\n`);
  });
});
