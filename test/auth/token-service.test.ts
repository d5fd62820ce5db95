import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenService, ENV_TOKEN_CALLER } from '../../src/auth/token-service.ts';
import { createTokenRepository, type TokenRepository } from '../../src/store/index.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
let tokens: TokenRepository;

beforeAll(async () => {
  db = await freshDatabase();
  tokens = createTokenRepository(db.pool);
});
afterAll(() => db?.close());

/** The repository, counting how often it is asked. */
function counting(repository: TokenRepository): {
  tokens: Pick<TokenRepository, 'findByToken'>;
  lookups: () => number;
} {
  let lookups = 0;
  return {
    tokens: {
      findByToken: (token) => {
        lookups += 1;
        return repository.findByToken(token);
      },
    },
    lookups: () => lookups,
  };
}

describe('token service', () => {
  it('knows SWITCHBOARD_TOKEN as "env" without asking the database, and nothing close to it', async () => {
    const repo = counting(tokens);
    const service = createTokenService({ tokens: repo.tokens, envToken: 'static-token-value-123' });
    expect(await service.authenticate('static-token-value-123')).toEqual({ name: ENV_TOKEN_CALLER });
    expect(repo.lookups()).toBe(0);
    for (const wrong of ['static-token-value-12', 'static-token-value-1234', 'STATIC-TOKEN-VALUE-123', '']) {
      expect(await service.authenticate(wrong), wrong).toBeNull();
    }
    const none = createTokenService({ tokens: repo.tokens, envToken: '' });
    expect(await none.authenticate('')).toBeNull();
  });

  it('trusts a valid managed token for the cache TTL, then asks again and sees a revocation', async () => {
    const { token } = await tokens.create('cached');
    const repo = counting(tokens);
    let t = 0;
    const service = createTokenService({ tokens: repo.tokens, cacheTtlMs: 5_000, now: () => t });
    expect(await service.authenticate(token)).toEqual({ name: 'cached' });
    expect(await service.authenticate(token)).toEqual({ name: 'cached' });
    expect(repo.lookups()).toBe(1);
    await tokens.revoke('cached');
    t = 4_999;
    expect(await service.authenticate(token)).toEqual({ name: 'cached' });
    t = 5_001;
    expect(await service.authenticate(token)).toBeNull();
    expect(repo.lookups()).toBe(2);
  });

  it('never caches a failure, and with a TTL of 0 asks every time', async () => {
    const repo = counting(tokens);
    const service = createTokenService({ tokens: repo.tokens, cacheTtlMs: 0 });
    const { token } = await tokens.create('uncached');
    await service.authenticate(token);
    await service.authenticate(token);
    await service.authenticate('sbt_guess');
    await service.authenticate('sbt_guess');
    expect(repo.lookups()).toBe(4);
  });
});
