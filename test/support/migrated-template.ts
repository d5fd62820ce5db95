/**
 * The run's databases on its shared server: the migrated template its files copy, and the drops
 * that global-setup.ts starts and finishes.
 *
 * One migrated database per test run, which test/support/database.ts copies (CREATE DATABASE …
 * TEMPLATE) for each migrated test database: applying the migrations took 2–5 s a database on CI's
 * busy server, a copy takes a few hundred ms. It is made by the first file that needs one, so a
 * run whose files need none (test/postgres, test/cli) does not pay for it. freshDatabase still
 * runs migrate on the copy (nothing pending then), so the start path's partition check runs on
 * every test database as before; the migrations themselves are tested on empty databases
 * (test/store/migrations.test.ts and others).
 *
 * A test database's drop (database.ts) only closes it to connections; the run's own process drops
 * the closed ones in the background (startDroppingClosed) and the rest at the end. Each DROP
 * DATABASE waits for a checkpoint of the whole server, 0.2–9 s while other files write, which a
 * file's teardown used to spend; dropped all at the end they took over a minute for 19 files.
 */
import { createPool, sql } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../../src/log/logger.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { migrate } from '../../src/store/database/migrate.ts';

/**
 * Makes the template `name` on the server at `serverUrl` unless it is there: created, migrated,
 * then closed to connections (a copy fails while anyone is connected to its template). Files
 * running at once take turns on an advisory lock, so one makes it and the others find it made.
 */
export async function ensureMigratedTemplate(serverUrl: string, name: string): Promise<void> {
  const admin = await createPool(serverUrl, { maximumPoolSize: 1 });
  try {
    await admin.connect(async (connection) => {
      await connection.query(sql.unsafe`SELECT pg_advisory_lock(hashtext(${name}))`);
      try {
        const made = await connection.exists(sql.unsafe`SELECT 1 FROM pg_database WHERE datname = ${name}`);
        if (made) return;
        const template = sql.identifier([name]);
        await connection.query(sql.unsafe`CREATE DATABASE ${template} TEMPLATE template0 ENCODING 'UTF8'`);
        try {
          const url = new URL(serverUrl);
          url.pathname = `/${encodeURIComponent(name)}`;
          const pool = await createDatabasePool(url.toString(), { maximumPoolSize: 1, interceptors: [] });
          try {
            await migrate(pool, createLogger({ level: 'silent' }));
          } finally {
            await pool.end();
          }
          await connection.query(sql.unsafe`ALTER DATABASE ${template} WITH ALLOW_CONNECTIONS false`);
        } catch (error) {
          // A half-migrated template must not be copied by the next file that finds it.
          await connection.query(sql.unsafe`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
          throw error;
        }
      } finally {
        await connection.query(sql.unsafe`SELECT pg_advisory_unlock(hashtext(${name}))`);
      }
    });
  } finally {
    await admin.end();
  }
}

/** Drops every database whose name starts with `prefix` (the template too), a few at a time. */
async function dropDatabasesNamed(serverUrl: string, prefix: string): Promise<void> {
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

export interface ClosedDatabaseDropper {
  /** Stops the background drops, then drops every database of the run still there. */
  finish(): Promise<void>;
}

/**
 * Drops, one at a time in the background, the run's databases that their files closed (no longer
 * allowing connections), but not the template, which is closed too and copied until the end.
 */
export function startDroppingClosed(serverUrl: string, prefix: string): ClosedDatabaseDropper {
  const template = `${prefix}template`;
  let finishing = false;
  let wake: () => void = () => undefined;
  const loop = (async () => {
    const admin = await createPool(serverUrl, { maximumPoolSize: 1 });
    try {
      while (!finishing) {
        const closed = await admin.anyFirst(
          sql.type(z.object({ datname: z.string() }))`
            SELECT datname FROM pg_database
            WHERE starts_with(datname, ${prefix}) AND NOT datallowconn AND datname <> ${template}
          `,
        );
        for (const name of closed) {
          if (finishing) break;
          await admin.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])} WITH (FORCE)`);
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1_000).unref();
        });
      }
    } finally {
      await admin.end();
    }
  })();
  return {
    async finish() {
      finishing = true;
      wake();
      // A failed background drop leaves its database to the final pass.
      await loop.catch(() => undefined);
      await dropDatabasesNamed(serverUrl, prefix);
    },
  };
}
