/**
 * Settings every store connection runs with, made once when the connection opens
 * (docs/adr/partition-plans.md).
 *
 * No parallel workers. Everything the store runs reads a page, a key or a bounded search, and none
 * of it gains from workers; yet on the partitioned tables PostgreSQL offers them for statements over
 * a few partitions however small those are (the min_parallel_table_scan_size floor applies to
 * whole tables, not to partitions, and a Parallel Append asks for a worker per doubling of its
 * partitions). The forward-state marks of a list page were planned with two workers over empty
 * partitions, and starting them took 56 ms on a loaded two-core machine, for a statement that
 * takes one.
 *
 * Made by a SET as each connection opens, which costs nothing per query: not a connection
 * parameter, which a pooler such as PgBouncer refuses unless told to ignore it (session-check.ts),
 * and not a statement per checkout, which would cost a round trip on every query.
 */
import { createPgDriverFactory } from '@slonik/pg-driver';
import type { DriverFactory } from 'slonik';

const SETTINGS = `SET max_parallel_workers_per_gather = 0`;

/** The same settings for connections the store opens with plain pg (the forward claim connections). */
export const STORE_SESSION_SETTINGS = SETTINGS;

/**
 * How long a session may sit inside an open transaction before PostgreSQL ends it: slonik's
 * default for the store's pool, passed to it explicitly and used by the claim connections too, so
 * a process that stalls mid-transaction (a blocked event loop, a bug between BEGIN and COMMIT)
 * cannot hold its row and advisory locks for longer (docs/adr/forward-cost-per-delivery.md).
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

/** slonik's driver, each connection it opens set up with SETTINGS before the pool hands it out. */
export function sessionSettingsDriverFactory(): DriverFactory {
  const base = createPgDriverFactory();
  return async (input) => {
    const driver = await base(input);
    return {
      createClient: async () => {
        const client = await driver.createClient();
        // The driver only runs queries on a checked-out client; release also runs the pool's
        // resetConnection, which puts the settings back itself (sessionReset).
        client.acquire();
        try {
          await client.query(SETTINGS);
        } catch (error) {
          await client.destroy().catch(() => undefined);
          throw error;
        }
        await client.release();
        return client;
      },
    };
  };
}

/** A pool's resetConnection that discards the session (DISCARD ALL) and makes the settings again. */
export async function sessionReset(connection: { query: (text: string) => Promise<void> }): Promise<void> {
  await connection.query('DISCARD ALL');
  await connection.query(SETTINGS);
}
