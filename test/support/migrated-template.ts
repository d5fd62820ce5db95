/**
 * One migrated database per test run, which test/support/database.ts copies (CREATE DATABASE …
 * TEMPLATE) for each migrated test database: applying the migrations took 2–5 s a database on CI's
 * busy server, a copy takes a few hundred ms. freshDatabase still runs migrate on the copy (nothing
 * pending then), so the start path's partition check runs on every test database as before; the
 * migrations themselves are tested on empty databases (test/store/migrations.test.ts and others).
 */
import { randomBytes } from 'node:crypto';
import { createPool, sql } from 'slonik';
import { createLogger } from '../../src/log/logger.ts';
import { createDatabasePool } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';

export interface MigratedTemplate {
  name: string;
  drop(): Promise<void>;
}

/** Creates and migrates the template on the server at `serverUrl`, then closes it to connections. */
export async function createMigratedTemplate(serverUrl: string): Promise<MigratedTemplate> {
  const name = `sb_template_${randomBytes(6).toString('hex')}`;
  const admin = await createPool(serverUrl, { maximumPoolSize: 1 });
  try {
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE template0 ENCODING 'UTF8'`);
    const url = new URL(serverUrl);
    url.pathname = `/${encodeURIComponent(name)}`;
    const pool = await createDatabasePool(url.toString(), { maximumPoolSize: 1, interceptors: [] });
    try {
      await migrate(pool, createLogger({ level: 'silent' }));
    } finally {
      await pool.end();
    }
    // A copy fails while anyone is connected to its template: refusing connections keeps it copyable.
    await admin.query(sql.unsafe`ALTER DATABASE ${sql.identifier([name])} WITH ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
  return {
    name,
    drop: async () => {
      const dropper = await createPool(serverUrl, { maximumPoolSize: 1 });
      try {
        await dropper.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])}`);
      } finally {
        await dropper.end();
      }
    },
  };
}
