import { describe, expect, it } from 'vitest';
import { ENV_TOKEN_CALLER, TokenService } from '../../src/auth/token-service.ts';
import type { TokenRepository } from '../../src/store/records/token-repository.ts';
import { useTokenDatabase } from './token-database.ts';

let tokens: TokenRepository;
useTokenDatabase((repository) => (tokens = repository), { emptied: false });

/** The repository, counting how often it is asked. */
function counting(repository: TokenRepository): {
  tokens: Pick<TokenRepository, 'findByToken' | 'activeHashes'>;
  lookups: () => number;
  checks: () => number;
} {
  let lookups = 0;
  let checks = 0;
  return {
    tokens: {
      findByToken: (token) => {
        lookups += 1;
        return repository.findByToken(token);
      },
      activeHashes: (hashes) => {
        checks += 1;
        return repository.activeHashes(hashes);
      },
    },
    lookups: () => lookups,
    checks: () => checks,
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('token service', () => {
  it('knows SWITCHBOARD_TOKEN as "env" without asking the database, and nothing close to it', async () => {
    const repo = counting(tokens);
    const service = new TokenService({ tokens: repo.tokens, envToken: 'static-token-value-123' });
    expect(await service.authenticate('static-token-value-123')).toMatchObject({ name: ENV_TOKEN_CALLER });
    expect(repo.lookups()).toBe(0);
    for (const wrong of ['static-token-value-12', 'static-token-value-1234', 'STATIC-TOKEN-VALUE-123', '']) {
      expect(await service.authenticate(wrong), wrong).toBeNull();
    }
    const none = new TokenService({ tokens: repo.tokens, envToken: '' });
    expect(await none.authenticate('')).toBeNull();
  });

  it('trusts a valid managed token for the cache TTL, then asks again and sees a revocation', async () => {
    const { token } = await tokens.create('cached');
    const repo = counting(tokens);
    let t = 0;
    const service = new TokenService({ tokens: repo.tokens, cacheTtlMs: 5_000, now: () => t });
    expect(await service.authenticate(token)).toMatchObject({ name: 'cached' });
    expect(await service.authenticate(token)).toMatchObject({ name: 'cached' });
    expect(repo.lookups()).toBe(1);
    await tokens.revoke('cached');
    t = 4_999;
    expect(await service.authenticate(token)).toMatchObject({ name: 'cached' });
    t = 5_001;
    expect(await service.authenticate(token)).toBeNull();
    expect(repo.lookups()).toBe(2);
  });

  it('never caches a failure, and with a TTL of 0 asks every time', async () => {
    const repo = counting(tokens);
    const service = new TokenService({ tokens: repo.tokens, cacheTtlMs: 0 });
    const { token } = await tokens.create('uncached');
    await service.authenticate(token);
    await service.authenticate(token);
    await service.authenticate('sbt_guess');
    await service.authenticate('sbt_guess');
    expect(repo.lookups()).toBe(4);
  });

  it("identifies a caller by its token, not its name: a new token under a revoked token's name is another caller", async () => {
    const service = new TokenService({ tokens, cacheTtlMs: 0 });
    const { token: first } = await tokens.create('renamed');
    const a = await service.authenticate(first);
    await tokens.revoke('renamed');
    const { token: second } = await tokens.create('renamed');
    const b = await service.authenticate(second);
    expect(a?.name).toBe('renamed');
    expect(b?.name).toBe('renamed');
    expect(a?.id).not.toBe(b?.id);
    expect(a?.id).not.toContain(first);
  });

  it('tells watchers of a revoked token within one recheck, with one query for every watched token', async () => {
    const repo = counting(tokens);
    const service = new TokenService({ tokens: repo.tokens, recheckMs: 100, envToken: 'env-token-value-456' });
    try {
      const { token: doomed } = await tokens.create('watched-doomed');
      const { token: kept } = await tokens.create('watched-kept');
      const doomedCaller = await service.authenticate(doomed);
      const keptCaller = await service.authenticate(kept);
      const envCaller = await service.authenticate('env-token-value-456');
      if (!doomedCaller || !keptCaller || !envCaller) throw new Error('tokens not accepted');
      const told: string[] = [];
      service.watch(doomedCaller, () => told.push('doomed-1'));
      service.watch(doomedCaller, () => told.push('doomed-2'));
      const stopped = service.watch(doomedCaller, () => told.push('stopped'));
      service.watch(keptCaller, () => told.push('kept'));
      service.watch(envCaller, () => told.push('env'));
      stopped();
      await sleep(350);
      expect(told).toEqual([]);
      const checksBefore = repo.checks();
      expect(checksBefore).toBeGreaterThanOrEqual(2);
      await tokens.revoke('watched-doomed');
      const deadline = performance.now() + 2_000;
      while (told.length < 2 && performance.now() < deadline) await sleep(20);
      expect(told.sort()).toEqual(['doomed-1', 'doomed-2']);
      // The revoked token is no longer served from the cache either.
      expect(await service.authenticate(doomed)).toBeNull();
      await sleep(350);
      expect(told.sort()).toEqual(['doomed-1', 'doomed-2']);
    } finally {
      service.close();
    }
  });
});
