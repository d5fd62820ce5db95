/** The token tests' database: one fresh database a suite, its token repository handed to the suite. */
import { sql } from 'slonik';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createTokenRepository, type TokenRepository } from '../../src/store/records/token-repository.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';

/**
 * Registers the suite's hooks: a fresh database before all (its repository given to `use`), closed
 * after all; with `emptied`, every test starts with no tokens.
 */
export function useTokenDatabase(use: (tokens: TokenRepository) => void, options: { emptied: boolean }): void {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await freshDatabase();
    use(createTokenRepository(db.pool));
  });
  afterAll(() => db?.close());
  if (options.emptied) {
    beforeEach(async () => {
      await db?.pool.query(sql.unsafe`DELETE FROM api_tokens`);
    });
  }
}
