/**
 * The forward dispatcher's hot statements (settle and claim, settle alone, extend leases) run as
 * named prepared statements on connections of their own, with plain `pg`: each cycle sends a
 * Bind and an Execute of its arrays instead of some 3 KB of SQL text, and skips slonik's fragment
 * building and per-query routine (docs/adr/forward-cost-per-delivery.md, fifth step). Everything
 * else stays on the store's slonik pool.
 *
 * pg.Pool drops a connection that failed and opens a new one for the next statement, so after a
 * database outage the statements work again as soon as PostgreSQL answers, as the slonik pool's
 * do; a statement that fails meanwhile rejects, and the dispatcher's poll tries again. Nothing
 * connects until the first statement: an ingest process never opens these connections.
 */
import pg from 'pg';
import type { Logger } from '../../log/logger.ts';
import { IDLE_IN_TRANSACTION_TIMEOUT_MS, STORE_SESSION_SETTINGS } from '../database/session-settings.ts';

/**
 * Runs the named statement (prepared on each connection the first time it runs there) and
 * answers its rows as objects, int8 as bigint.
 */
type RunStatement = (name: string, text: string, values: readonly unknown[]) => Promise<unknown[]>;

export interface ClaimConnection {
  run: RunStatement;
  /**
   * Runs `work` in a transaction on one connection, committed when it resolves. When it fails the
   * connection is closed, not reused: its transaction ends with it, whatever state it was in.
   */
  transaction<T>(work: (run: RunStatement) => Promise<T>): Promise<T>;
  /** Ends the connections; idempotent. */
  close(): Promise<void>;
}

export interface ClaimConnectionOptions {
  logger: Logger;
  /**
   * Default 2. Each rule runs one cycle statement at a time, and lease extensions are rare, so
   * the wiring passes the number of rules plus one, capped (claimConnectionsFor).
   */
  maxConnections?: number;
  /** Default 30 s, as the store's pool. */
  statementTimeoutMs?: number;
  /** Default 5 s, as the store's pool. */
  connectionTimeoutMs?: number;
}

const INT8_OID = 20;
/** pg's own parser for a type, typed as what it is (pg-types declares it any). */
const pgParser = (oid: number, format: 'text' | 'binary'): ((value: string) => unknown) =>
  pg.types.getTypeParser(oid, format) as (value: string) => unknown;

/** int8 as bigint (claimed-row.ts checks it is a safe integer); every other type as pg reads it. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => BigInt(value)
      : pgParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** Most claim connections one process opens, however many rules: the store's pool is 10. */
const MAX_CLAIM_CONNECTIONS = 8;

/**
 * Connections for `rules` forward rules: one per rule, so that no rule's cycle waits behind
 * another's statement, and one for lease extensions; at least 2, at most MAX_CLAIM_CONNECTIONS
 * (docs/adr/forward-cost-per-delivery.md, "Keeping up").
 */
export const claimConnectionsFor = (rules: number): number => Math.min(MAX_CLAIM_CONNECTIONS, Math.max(2, rules + 1));

/** The failure reaches the statement that was running, or the next one, as its rejection. */
const ignoreCheckedOutError = (): void => undefined;

export function openClaimConnection(url: string, options: ClaimConnectionOptions): ClaimConnection {
  const statementTimeoutMs = Math.round(options.statementTimeoutMs ?? 30_000);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 2,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'switchboard-forward',
    types,
  });
  // A connection that breaks while idle is dropped by the pool; without a listener the error
  // would be thrown. The next statement opens a new one.
  pool.on('error', (error) => {
    options.logger.warn({ err: error }, 'a forward claim connection failed; the next statement opens another');
  });
  const ready = new WeakSet<pg.PoolClient>();
  /**
   * Runs `work` on a connection of the pool, set up first if it is new. A generic plan over the
   * partitioned deliveries table would lock every partition on each run
   * (docs/adr/ingest-performance.md), so every run is planned for its own values; the prepared
   * statement still saves sending and parsing the text. Set as a statement rather than as
   * startup parameters, which a session pooler may refuse. The store pool's idle-in-transaction
   * timeout and its session settings apply here as well. A connection whose work failed is
   * closed, not reused: a transaction or a half-read answer ends with it.
   */
  async function withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    // pg.Pool listens for errors on idle connections only: one that PostgreSQL ends while it is
    // checked out (the idle-in-transaction timeout, a terminated backend) would otherwise throw
    // from the socket. Its statement rejects with the error, and the connection is not reused.
    client.on('error', ignoreCheckedOutError);
    try {
      if (!ready.has(client)) {
        await client.query(
          `SET plan_cache_mode = force_custom_plan; SET statement_timeout = ${statementTimeoutMs}; ` +
            `SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}; ${STORE_SESSION_SETTINGS}`,
        );
        ready.add(client);
      }
      const result = await work(client);
      client.off('error', ignoreCheckedOutError);
      client.release();
      return result;
    } catch (error) {
      client.off('error', ignoreCheckedOutError);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
  }
  let closed: Promise<void> | undefined;
  return {
    async run(name, text, values) {
      return withClient(async (client) => {
        const { rows } = await client.query<Record<string, unknown>>({ name, text, values: [...values] });
        return rows;
      });
    },
    transaction(work) {
      return withClient(async (client) => {
        await client.query('BEGIN');
        const result = await work(async (name, text, values) => {
          const { rows } = await client.query<Record<string, unknown>>({ name, text, values: [...values] });
          return rows;
        });
        await client.query('COMMIT');
        return result;
      });
    },
    close() {
      closed ??= pool.end();
      return closed;
    },
  };
}
