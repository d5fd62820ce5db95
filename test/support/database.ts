/**
 * An isolated, migrated database per test file on the run's shared server, closed afterwards and
 * dropped by the run (migrated-template.ts), so no test ever sees another's rows. A migrated one
 * starts as a copy of the run's migrated template.
 */
import { randomBytes } from 'node:crypto';
import { createPool, sql, type CommonQueryMethods, type DatabasePool, type Interceptor } from 'slonik';
import { inject } from 'vitest';
import { createLogger, type Logger } from '../../src/log/logger.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { migrate } from '../../src/store/database/migrate.ts';
import { ensureMigratedTemplate } from './migrated-template.ts';

export interface TestDatabase {
  pool: DatabasePool;
  url: string;
  name: string;
  close(): Promise<void>;
}

export interface FreshDatabaseOptions {
  /** Run the migrations (default true). */
  migrate?: boolean;
  maximumPoolSize?: number;
  interceptors?: readonly Interceptor[];
}

export const silentLogger: Logger = createLogger({ level: 'silent' });

/** The run's server URL pointed at another database. */
export function databaseUrl(name: string, base: string = inject('databaseUrl')): string {
  const url = new URL(base);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

async function withAdmin<T>(work: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const admin = await createPool(inject('databaseUrl'), { maximumPoolSize: 1 });
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

export async function createEmptyDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  return createDatabase('template0');
}

/**
 * A database with every migration applied: a copy of the run's migrated template
 * (migrated-template.ts), on which migrate finds nothing pending.
 */
export async function createMigratedDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const template = `${inject('testDatabasePrefix')}template`;
  templateReady ??= ensureMigratedTemplate(inject('databaseUrl'), template);
  await templateReady;
  return createDatabase(template);
}

/** This file's wait for the run's template, made by whichever file needed it first. */
let templateReady: Promise<void> | undefined;

/** A new database copied from `template` (template0: empty). */
async function createDatabase(template: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${inject('testDatabasePrefix')}${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) =>
    admin.query(
      sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE ${sql.identifier([template])} ENCODING 'UTF8'`,
    ),
  );
  return {
    name,
    url: databaseUrl(name),
    // Closed to connections, and those still open ended, as a DROP ... WITH (FORCE) would; the run's
    // own process drops it (migrated-template.ts says why).
    drop: () =>
      withAdmin(async (admin) => {
        await admin.query(sql.unsafe`ALTER DATABASE ${sql.identifier([name])} WITH ALLOW_CONNECTIONS false`);
        await admin.query(
          sql.unsafe`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`,
        );
      }),
  };
}

export async function freshDatabase(options: FreshDatabaseOptions = {}): Promise<TestDatabase> {
  const database = options.migrate === false ? await createEmptyDatabase() : await createMigratedDatabase();
  const pool = await createDatabasePool(database.url, {
    maximumPoolSize: options.maximumPoolSize ?? 5,
    interceptors: options.interceptors ?? [],
  });
  if (options.migrate !== false) await migrate(pool, silentLogger);
  let closed: Promise<void> | null = null;
  return {
    pool,
    url: database.url,
    name: database.name,
    close: () => {
      closed ??= pool.end().finally(() => database.drop());
      return closed;
    },
  };
}

/**
 * Makes PostgreSQL refuse, with a real error ('refused for the test'), every row inserted into
 * `table` whose `column` holds `value`: a BEFORE INSERT trigger named `trigger`. Answers how to
 * take it away again.
 */
export async function refuseInserts(
  db: CommonQueryMethods,
  refusal: { trigger: string; table: string; column: string; value: string },
): Promise<() => Promise<void>> {
  await db.query(sql.unsafe`
    CREATE OR REPLACE FUNCTION refuse_for_the_test() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF to_jsonb(NEW) ->> TG_ARGV[0] = TG_ARGV[1] THEN RAISE EXCEPTION 'refused for the test'; END IF;
      RETURN NEW;
    END $$
  `);
  const trigger = sql.identifier([refusal.trigger]);
  const table = sql.identifier([refusal.table]);
  await db.query(sql.unsafe`
    CREATE TRIGGER ${trigger} BEFORE INSERT ON ${table} FOR EACH ROW
    EXECUTE FUNCTION refuse_for_the_test(${sql.literalValue(refusal.column)}, ${sql.literalValue(refusal.value)})
  `);
  return async () => {
    await db.query(sql.unsafe`DROP TRIGGER ${trigger} ON ${table}`);
  };
}
