/**
 * Where the database comes from: DATABASE_URL when set, otherwise a PostgreSQL embedded in the
 * data directory. Either way callers get one slonik pool configured the same way.
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  createPool,
  createTypeParserPreset,
  SchemaValidationError,
  sql,
  type DatabasePool,
  type DriverTypeParser,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';
import { z } from 'zod';
import type { Logger } from '../../log/logger.ts';
import {
  startEmbeddedPostgres,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
} from '../../postgres/embedded-postgres.ts';
import { migrate } from './migrate.ts';
import { releasePromiseHooksBetweenTransactions } from './promise-hooks.ts';
import { checkSessions, PoolerError, refusedStartupParameter } from './session-check.ts';
import { IDLE_IN_TRANSACTION_TIMEOUT_MS, sessionReset, sessionSettingsDriverFactory } from './session-settings.ts';
import type { PartitionUnit } from '../../../generated/constants.ts';
import { redactUrl } from '../../log/redact-url.ts';

/** @internal outside src/, only tests or benches use it */
export interface PoolOptions {
  /** Default 10: ingest group-commits, so a few connections carry many webhooks. */
  maximumPoolSize?: number;
  /** Default 30 s. Migrations lift it for themselves. */
  statementTimeoutMs?: number;
  /** Default 5 s to establish a connection. */
  connectionTimeoutMs?: number;
  /** Default 30 s before an idle connection is closed. */
  idleTimeoutMs?: number;
  /** Added after the store's own interceptors (tests capture queries this way). */
  interceptors?: readonly Interceptor[];
  /**
   * Run DISCARD ALL whenever a connection goes back to the pool (slonik's default), then the
   * store's session settings again (session-settings.ts). Off by default: slonik releases after
   * every query, so it costs an extra round trip per query (about 1 ms, doubling a list call).
   * Code that changes session state on a pool.connect() connection must undo it itself (migrate
   * does), or use SET LOCAL inside a transaction.
   */
  resetSessionOnRelease?: boolean;
}

export interface OpenDatabaseOptions {
  /** A PostgreSQL 15+ URL; when absent, an embedded PostgreSQL runs in dataDir. */
  databaseUrl?: string | undefined;
  dataDir: string;
  logger: Logger;
  /** Apply pending migrations before returning. Default true. */
  migrate?: boolean;
  /** store.partition, for the partitions migration makes. */
  partition?: PartitionUnit;
  pool?: PoolOptions;
  /** With databaseUrl: how long to keep retrying while the server is not reachable yet. Default 30 s. */
  startupTimeoutMs?: number;
  /** Embedded mode only. */
  embedded?: Pick<EmbeddedPostgresOptions, 'port' | 'settings' | 'database' | 'startTimeoutMs' | 'durable'>;
}

export interface Database {
  pool: DatabasePool;
  /** Connection URL, password included: never log it (see redactUrl). */
  url: string;
  /** The embedded server, or null when DATABASE_URL was used. */
  embedded: EmbeddedPostgres | null;
  /** Ends the pool, then stops the embedded server. Idempotent. */
  close(): Promise<void>;
}

const RESULT_PARSER_INTERCEPTOR_NAME = 'switchboard-result-parser';

/**
 * Validates rows of sql.type(schema) queries against their zod schema (slonik 47 leaves parsing
 * to an interceptor), so a schema drift fails loudly at the query instead of deep in a mapper.
 */
const resultParserInterceptor: Interceptor = {
  name: RESULT_PARSER_INTERCEPTOR_NAME,
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    // sql.unsafe and sql.type(z.unknown()) accept any row as it is: parsing would only cost (on
    // the forward path, every claimed and settled row), so those rows pass untouched.
    if (!parser || parser instanceof z.ZodAny || parser instanceof z.ZodUnknown) return row;
    const parsed = parser.safeParse(row);
    if (!parsed.success) throw new SchemaValidationError(query, row, parsed.error.issues);
    return parsed.data as QueryResultRow;
  },
};

/**
 * slonik's preset turns timestamptz into epoch milliseconds, silently dropping the microseconds
 * the contract promises. Timestamps are kept as PostgreSQL's text instead; the store renders the
 * ones it returns with to_char anyway, this only guards a raw column that slips through.
 */
function typeParsers(): readonly DriverTypeParser[] {
  const keepText = (value: string): string => value;
  return [
    ...createTypeParserPreset().filter((parser) => parser.name !== 'timestamptz' && parser.name !== 'timestamp'),
    { name: 'timestamptz', parse: keepText },
    { name: 'timestamp', parse: keepText },
  ];
}

/** @internal outside src/, only tests or benches use it */
export async function createDatabasePool(url: string, options: PoolOptions = {}): Promise<DatabasePool> {
  releasePromiseHooksBetweenTransactions();
  return createPool(url, {
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeoutMs ?? 30_000,
    idleInTransactionSessionTimeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    idleTimeout: options.idleTimeoutMs ?? 30_000,
    interceptors: [resultParserInterceptor, ...(options.interceptors ?? [])],
    typeParsers: typeParsers(),
    driverFactory: sessionSettingsDriverFactory(),
    resetConnection: options.resetSessionOnRelease ? sessionReset : async () => {},
  });
}

/** The store's queries depend on the result parser; fail at wiring time, not on the first read. */
export function assertStorePool(pool: DatabasePool): void {
  if (!pool.configuration.interceptors.some((interceptor) => interceptor.name === RESULT_PARSER_INTERCEPTOR_NAME)) {
    throw new TypeError('the store needs a pool from createDatabasePool (it validates rows with the result parser)');
  }
}

export async function isDatabaseUp(pool: DatabasePool, timeoutMs = 2_000): Promise<boolean> {
  const probe = pool.oneFirst(sql.unsafe`SELECT 1`).then(
    () => true,
    () => false,
  );
  const timeout = delay(timeoutMs, false, { ref: false });
  return Promise.race([probe, timeout]);
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const { logger } = options;
  let embedded: EmbeddedPostgres | null = null;
  let url: string;
  if (options.databaseUrl) {
    url = options.databaseUrl;
  } else {
    embedded = await startEmbeddedPostgres({ dataDir: options.dataDir, logger, ...options.embedded });
    url = embedded.url;
  }

  let pool: DatabasePool | null = null;
  try {
    pool = await connectWithRetry(url, options, embedded ? 0 : (options.startupTimeoutMs ?? 30_000));
    // The embedded server is switchboard's own, with no pooler in front: nothing to check there.
    if (embedded === null) await checkSessions(url);
    if (options.migrate !== false) await migrate(pool, logger, { partition: options.partition });
  } catch (error) {
    await pool?.end().catch(() => undefined);
    await embedded?.stop();
    throw error;
  }

  logger.info({ database: redactUrl(url), embedded: embedded !== null }, 'database ready');
  const openPool = pool;
  let closing: Promise<void> | null = null;
  return {
    pool: openPool,
    url,
    embedded,
    close: () => {
      closing ??= (async () => {
        try {
          await openPool.end();
        } finally {
          await embedded?.stop();
        }
      })();
      return closing;
    },
  };
}

/** Errors that mean "not reachable yet" rather than "misconfigured". */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P03',
]);

function transientCode(error: unknown): string | null {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if ('code' in current && typeof current.code === 'string' && TRANSIENT_CODES.has(current.code)) return current.code;
    if (/timeout expired|Connection terminated/i.test(current.message)) return 'timeout';
    current = current.cause;
  }
  return null;
}

/**
 * slonik connects while creating a pool (to read type oids), so a database that is still booting
 * (compose, systemd ordering) would fail startup; keep trying for a while. Once the pool exists,
 * broken connections are discarded and replaced by slonik itself.
 */
async function connectWithRetry(url: string, options: OpenDatabaseOptions, timeoutMs: number): Promise<DatabasePool> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await createDatabasePool(url, options.pool);
    } catch (error) {
      const refused = refusedStartupParameter(error);
      if (refused !== null) throw PoolerError.startupParameter(refused);
      const code = transientCode(error);
      if (code === null || Date.now() >= deadline) throw error;
      options.logger.warn({ database: redactUrl(url), code, attempt }, 'database not reachable yet; retrying');
      await delay(Math.min(2_000, 200 * attempt));
    }
  }
}
