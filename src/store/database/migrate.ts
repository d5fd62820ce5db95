/**
 * Versioned SQL migrations from src/store/database/migrations: NNNN-name.sql, applied in order, each in its
 * own transaction, recorded in schema_migrations with a checksum. Applied at every start and by
 * `switchboard migrate`.
 *
 * Shape repeat by intent: a migration that rebuilds tables restates their definitions
 * (0011-time-partitions.sql repeats columns and indexes of 0001, 0002, 0004 and 0007), and one that
 * changes a PL/pgSQL function restates it whole, since CREATE OR REPLACE FUNCTION takes the full
 * body (0013 restates 0011's switchboard_create_partition, and 0018 0013's; 0013, 0015 and 0016 each restate
 * switchboard_record_external_ids; 0014 restates 0012's three event-dependant triggers, which are
 * alike among themselves). A migration is frozen once applied, to the byte (the checksum above), so
 * the files cannot share text or even gain a comment; each says what its own step did to the schema.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { sql, type DatabasePool, type DatabasePoolConnection, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { STORE_PARTITION, type PartitionUnit } from '../../../generated/constants.ts';
import type { Logger } from '../../log/logger.ts';
import { upgradeToPartitions } from '../partitions/partition-upgrade.ts';
import { ensurePartitions, hasPartitions } from '../partitions/partitions.ts';
import { splitSqlStatements } from './split-sql.ts';
import { InternalError } from '../../errors/internal-error.ts';

/** @internal outside src/, only tests or benches use it */
export interface Migration {
  version: number;
  name: string;
  /** sha-256 (hex) of the file with line endings normalised, so a CRLF checkout still matches. */
  checksum: string;
  statements: string[];
}

export interface MigrateOptions {
  /** Where the .sql files are; defaults to the migrations shipped next to this module. */
  directory?: string;
  /** store.partition: the range of the partitions made at start (and by an upgrade). */
  partition?: PartitionUnit | undefined;
  /** Events per transaction when an older database is moved into partitions (partition-upgrade.ts). */
  upgradeBatchEvents?: number;
}

export interface MigrateResult {
  applied: number[];
  current: number;
}

/** @internal outside src/, only tests or benches use it */
export class MigrationError extends InternalError {
  readonly code = 'SB_ERR_MIGRATION';
}

/** @internal outside src/, only tests or benches use it */
export const DEFAULT_MIGRATIONS_DIRECTORY = fileURLToPath(new URL('./migrations/', import.meta.url));

/**
 * Every switchboard instance takes this session advisory lock before looking at the schema, so
 * instances starting together apply each migration exactly once and the others wait, then see it
 * applied. ('SWBD' as an integer.)
 */
const MIGRATION_LOCK_KEY = 0x5357_4244;

const FILE_NAME = /^(\d{4})-([a-z0-9][a-z0-9-]*)\.sql$/;

/** @internal outside src/, only tests or benches use it */
export async function loadMigrations(directory: string = DEFAULT_MIGRATIONS_DIRECTORY): Promise<Migration[]> {
  const names = (await readdir(directory)).filter((name) => name.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const fileName of names) {
    const match = FILE_NAME.exec(fileName);
    if (!match?.[1] || !match[2]) {
      throw new MigrationError(`migration file name ${fileName} is not NNNN-name.sql`);
    }
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version)) {
      throw new MigrationError(`two migration files share version ${version}`);
    }
    const text = (await readFile(path.join(directory, fileName), 'utf8')).replaceAll('\r\n', '\n');
    migrations.push({
      version,
      name: match[2],
      checksum: createHash('sha256').update(text).digest('hex'),
      statements: splitSqlStatements(text),
    });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

const appliedRow = z.object({ version: z.number().int(), name: z.string(), checksum: z.string() });

/**
 * Applies pending migrations. Refuses (MigrationError) when an applied migration's file changed
 * since it ran: the schema would no longer be what the code was written against.
 */
export async function migrate(
  pool: DatabasePool,
  logger: Logger,
  options: MigrateOptions = {},
): Promise<MigrateResult> {
  const migrations = await loadMigrations(options.directory);
  return pool.connect(async (connection) => {
    // Waiting for another instance's migration may take longer than the pool's statement timeout.
    await connection.query(sql.unsafe`SET statement_timeout = 0`);
    await connection.query(sql.unsafe`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY}::bigint)`);
    try {
      await connection.query(sql.unsafe`
        CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          checksum text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )
      `);
      const applied = await connection.any(
        sql.type(appliedRow)`SELECT version, name, checksum FROM schema_migrations ORDER BY version`,
      );
      const known = new Map(migrations.map((m) => [m.version, m]));
      for (const row of applied) {
        const migration = known.get(row.version);
        if (!migration) {
          // A newer switchboard migrated this database; older code may still work, so warn only.
          logger.warn(
            { version: row.version, migration: row.name },
            'database has a migration this switchboard does not know',
          );
          continue;
        }
        if (migration.checksum !== row.checksum) {
          throw new MigrationError(
            `migration ${pad(row.version)}-${row.name} was changed after it was applied ` +
              `(checksum ${row.checksum.slice(0, 12)}… in the database, ${migration.checksum.slice(0, 12)}… on disk); ` +
              'restore the original file and add a new migration instead',
          );
        }
      }
      const done = new Set(applied.map((row) => row.version));
      const pending = migrations.filter((m) => !done.has(m.version));
      for (const migration of pending) {
        const started = process.hrtime.bigint();
        await connection.transaction(async (tx) => {
          await runStatements(tx, migration.statements);
          await tx.query(sql.unsafe`
            INSERT INTO schema_migrations (version, name, checksum)
            VALUES (${migration.version}, ${migration.name}, ${migration.checksum})
          `);
        });
        logger.info(
          {
            version: migration.version,
            migration: migration.name,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'applied migration',
        );
      }
      if (await hasPartitions(connection)) await preparePartitions(connection, logger, options);
      const current = Math.max(0, ...applied.map((row) => row.version), ...pending.map((m) => m.version));
      return { applied: pending.map((m) => m.version), current };
    } finally {
      // The pool does not reset sessions on release (see createDatabasePool), so undo ours.
      await connection.query(sql.unsafe`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`);
      await connection.query(sql.unsafe`RESET statement_timeout`);
    }
  });
}

/**
 * After the schema: rows of an older database move into the partitions (in batches, see
 * partition-upgrade.ts), and the partitions ahead of now exist before anything is written.
 */
async function preparePartitions(
  connection: DatabasePoolConnection,
  logger: Logger,
  options: MigrateOptions,
): Promise<void> {
  const unit = options.partition ?? STORE_PARTITION.default;
  await upgradeToPartitions(connection, {
    unit,
    logger,
    ...(options.upgradeBatchEvents === undefined ? {} : { batchEvents: options.upgradeBatchEvents }),
  });
  try {
    await ensurePartitions(connection, unit);
  } catch (error) {
    // Another instance's long query held the lock: the DEFAULT partition takes events meanwhile,
    // and the worker's hourly run makes the partitions.
    logger.warn({ err: error }, 'could not create event partitions at start; the worker will retry');
  }
}

async function runStatements(tx: DatabaseTransactionConnection, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    await tx.query(sql.unsafe(rawTemplate(statement)));
  }
}

/**
 * Slonik only builds queries from template literals; a migration file is trusted text shipped
 * with the code, so it is passed as a template with no interpolations.
 */
function rawTemplate(text: string): TemplateStringsArray {
  return Object.freeze(Object.assign([text], { raw: Object.freeze([text]) }));
}

const pad = (version: number): string => String(version).padStart(4, '0');
