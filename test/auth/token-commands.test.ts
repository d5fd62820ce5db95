import { describe, expect, it } from 'vitest';
import { formatTokenList, runTokenCommand } from '../../src/auth/token-commands.ts';
import { TokenService } from '../../src/auth/token-service.ts';
import type { TokenRepository } from '../../src/store/records/token-repository.ts';
import { useTokenDatabase } from './token-database.ts';

let tokens: TokenRepository;
useTokenDatabase((repository) => (tokens = repository), { emptied: true });

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runTokenCommand(args, tokens, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('token commands', () => {
  it('create prints the token once on stdout; it authenticates as its name', async () => {
    const created = await run('create', 'laptop');
    expect(created.code).toBe(0);
    const token = created.out.trim();
    expect(token).toMatch(/^sbt_[A-Za-z0-9_-]{43}$/);
    expect(created.err).toMatch(/shown only this once/);
    expect(await new TokenService({ tokens }).authenticate(token)).toMatchObject({ name: 'laptop' });
    const again = await run('create', 'laptop');
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already exists/);
  });

  it('list shows names, dates and status, never a token', async () => {
    const { out: token } = await run('create', 'ci');
    await run('create', 'old');
    await run('revoke', 'old');
    const listed = await run('list');
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/^NAME\s+CREATED\s+LAST USED\s+STATUS\n/);
    expect(listed.out).toMatch(/\nci\s+\S+\s+-\s+active\n/);
    expect(listed.out).toMatch(/\nold\s+.*revoked /);
    expect(listed.out).not.toContain(token.trim());
    expect(listed.out).not.toContain('sbt_');
    expect(formatTokenList([])).toBe('no tokens\n');
  });

  it('escapes a name for the terminal, whatever got it into the database (issue 26.3)', () => {
    const at = '2026-01-01T00:00:00.000000Z';
    const listed = formatTokenList([
      { name: 'ci\u001b]0;owned\u0007\u202e', createdAt: at, lastUsedAt: null, revokedAt: null },
    ]);
    expect(listed).toContain('ci\\x1b]0;owned\\x07\\u202e');
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    expect(listed).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u202e]/);
  });

  it('revoke ends a token at once; revoking twice says so; an unknown name fails', async () => {
    const { out } = await run('create', 'temp');
    // Uncached: this is about the database's answer, not a running server's few seconds of trust.
    const service = new TokenService({ tokens, cacheTtlMs: 0 });
    expect(await service.authenticate(out.trim())).toMatchObject({ name: 'temp' });
    expect(await run('revoke', 'temp')).toMatchObject({ code: 0, err: 'revoked token temp\n' });
    expect(await service.authenticate(out.trim())).toBeNull();
    expect(await run('revoke', 'temp')).toMatchObject({ code: 0, err: 'token temp was already revoked\n' });
    expect(await run('revoke', 'nobody')).toMatchObject({ code: 1 });
  });

  it('refuses bad usage, bad names and the reserved name env', async () => {
    for (const args of [[], ['create'], ['revoke'], ['list', 'extra'], ['rotate', 'x'], ['create', 'a', 'b']]) {
      expect((await run(...args)).code, args.join(' ')).toBe(2);
    }
    expect(await run('create', 'has space')).toMatchObject({ code: 2 });
    expect(await run('create', 'env')).toMatchObject({ code: 2, err: expect.stringMatching(/reserved/) });
    expect(await tokens.count()).toBe(0);
  });
});
