/**
 * Signature tokens already used (migration 0019): ingest claims the token of a delivery whose
 * signature does not cover its body (Mailgun), and only the first claim of a token succeeds, on
 * any instance sharing the database. The claim is one statement, so two deliveries racing with
 * one token get one success between them.
 */
import { createHash } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { assertStorePool } from '../database/database.ts';
import { startPeriodicJob, type PeriodicJob } from '../partitions/periodic-job.ts';
import type { Logger } from '../../log/logger.ts';

/**
 * Claims a provider's token for these body bytes until `expiresAtMs`; false when it was claimed
 * before, with other bytes, and has not expired. The same bytes again are the same delivery (a
 * provider retrying one it was not answered for), which proves nothing new: it passes, and the
 * event store tells it is a duplicate if it has one.
 */
export type ClaimNonce = (provider: string, token: string, expiresAtMs: number, body: Buffer) => Promise<boolean>;

/** Only a digest is kept: a token is a delivery's, and the table need not hold it to tell it again. */
const digest = (bytes: string | Buffer): string => createHash('sha256').update(bytes).digest('hex');

export function createNonceClaims(pool: DatabasePool): ClaimNonce {
  assertStorePool(pool);
  return async (provider, token, expiresAtMs, body) => {
    // One statement: of two deliveries racing with one token and other bytes, exactly one inserts;
    // the other finds the row and its WHERE false, so it returns nothing. An expired row is no
    // claim and is taken over (its signature could not pass any more anyway).
    const claimed = await pool.maybeOne(sql.type(z.object({ claimed: z.boolean() }))`
      INSERT INTO signature_nonces (provider, token, body_sha256, expires_at)
      VALUES (${provider}, ${digest(token)}, ${digest(body)}, to_timestamp(${expiresAtMs / 1000}))
      ON CONFLICT (provider, token) DO UPDATE
        SET expires_at = EXCLUDED.expires_at, body_sha256 = EXCLUDED.body_sha256
        WHERE signature_nonces.expires_at < now() OR signature_nonces.body_sha256 = EXCLUDED.body_sha256
      RETURNING true AS claimed
    `);
    return claimed !== null;
  };
}

export interface NonceExpiryOptions {
  pool: DatabasePool;
  logger: Logger;
  intervalMs?: number;
}

/** Deletes expired tokens now and then; a delete is idempotent, so instances need no lock. */
export function startNonceExpiry(options: NonceExpiryOptions): PeriodicJob<number> {
  const intervalMs = options.intervalMs ?? 60_000;
  return startPeriodicJob({
    run: async () => {
      const result = await options.pool.query(sql.unsafe`DELETE FROM signature_nonces WHERE expires_at < now()`);
      return result.rowCount;
    },
    firstDelayMs: intervalMs,
    intervalMs,
    onError: (error) => options.logger.warn({ err: error }, 'expired signature tokens not deleted; will retry'),
  });
}
