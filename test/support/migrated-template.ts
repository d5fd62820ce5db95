/**
 * The run's databases on its shared server, made and dropped by global-setup.ts.
 *
 * One migrated database per test run, which test/support/database.ts copies (CREATE DATABASE …
 * TEMPLATE) for each migrated test database: applying the migrations took 2–5 s a database on CI's
 * busy server, a copy takes a few hundred ms. freshDatabase still runs migrate on the copy (nothing
 * pending then), so the start path's partition check runs on every test database as before; the
 * migrations themselves are tested on empty databases (test/store/migrations.test.ts and others).
 *
 * The test databases, named with the run's prefix, are dropped together once the run ends: each
 * DROP DATABASE waits for a checkpoint of the whole server, 0.2–3 s while the other files write,
 * which a file's teardown used to spend. A file's drop only closes its database to connections.
 */
import { randomBytes } from 'node:crypto';
import { createPool, sql } from 'slonik';
import { z } from 'zod';
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

/** Drops every database whose name starts with `prefix`, a few at a time. */
export async function dropDatabasesNamed(serverUrl: string, prefix: string): Promise<void> {
  const admin = await createPool(serverUrl, { maximumPoolSize: 4 });
  try {
    const names = await admin.anyFirst(
      sql.type(z.object({ datname: z.string() }))`
        SELECT datname FROM pg_database WHERE starts_with(datname, ${prefix})
      `,
    );
    const queue = [...names];
    const dropNext = async (): Promise<void> => {
      for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
        await admin.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
      }
    };
    await Promise.all([dropNext(), dropNext(), dropNext(), dropNext()]);
  } finally {
    await admin.end();
  }
}
