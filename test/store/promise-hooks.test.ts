/**
 * slonik's transaction context (an AsyncLocalStorage) is on only while a transaction runs
 * (src/store/database/promise-hooks.ts): once the last one ends, the process's promise hooks stop
 * costing every later promise, and inside a transaction slonik's guard against a query on another
 * connection still holds.
 */
import { sql, UnexpectedForeignConnectionError } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transactionContextEnabled } from '../../src/store/database/promise-hooks.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await freshDatabase({ migrate: false });
});

afterAll(async () => {
  await db.close();
});

describe("slonik's transaction context", () => {
  it('is off once a transaction has ended, and on while one runs', async () => {
    let inside: boolean | undefined;
    const answer = await db.pool.transaction(async (tx) => {
      inside = transactionContextEnabled();
      return tx.oneFirst(sql.type(z.object({ one: z.number() }))`SELECT 1 AS one`);
    });
    expect(answer).toBe(1);
    expect(inside).toBe(true);
    expect(transactionContextEnabled()).toBe(false);
  });

  it('stays on until the last of overlapping transactions ends, and after a failed one is off', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const long = db.pool.transaction(async (tx) => {
      await held;
      return tx.oneFirst(sql.type(z.object({ two: z.number() }))`SELECT 2 AS two`);
    });
    await db.pool.transaction((tx) => tx.query(sql.unsafe`SELECT 1`));
    expect(transactionContextEnabled()).toBe(true);
    release();
    expect(await long).toBe(2);
    expect(transactionContextEnabled()).toBe(false);
    await expect(db.pool.transaction((tx) => tx.query(sql.unsafe`SELECT 1/0`))).rejects.toThrow();
    expect(transactionContextEnabled()).toBe(false);
  });

  it('still refuses a query on another connection from inside a transaction', async () => {
    await expect(db.pool.transaction(async () => db.pool.query(sql.unsafe`SELECT 1`))).rejects.toBeInstanceOf(
      UnexpectedForeignConnectionError,
    );
    expect(transactionContextEnabled()).toBe(false);
  });
});
