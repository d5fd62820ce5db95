import { cp, mkdtemp, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import {
  DEFAULT_MIGRATIONS_DIRECTORY,
  loadMigrations,
  migrate,
  MigrationError,
} from '../../src/store/database/migrate.ts';
import { splitSqlStatements } from '../../src/store/database/split-sql.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import { createEmptyDatabase, silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

const appliedRow = z.object({ version: z.number(), name: z.string(), checksum: z.string(), applied_at: z.string() });

async function applied(pool: DatabasePool) {
  return pool.any(
    sql.type(appliedRow)`SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version`,
  );
}

// The versions shipped in src/store/database/migrations, and a file name for one more after them.
const SHIPPED = (await loadMigrations()).map((m) => m.version);
const LATEST = Math.max(...SHIPPED);
const NEXT = String(LATEST + 1).padStart(4, '0');

describe('migrations', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function emptyPool(): Promise<{ pool: DatabasePool; url: string }> {
    const database = await createEmptyDatabase();
    const pool = await createDatabasePool(database.url, { maximumPoolSize: 2 });
    cleanups.push(() => pool.end().then(() => database.drop()));
    return { pool, url: database.url };
  }

  /** A directory holding the shipped migrations up to `version`: the schema an older release left. */
  async function migrationsUpTo(version: number): Promise<string> {
    const directory = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    for (const m of (await loadMigrations()).filter((m) => m.version <= version)) {
      const file = `${String(m.version).padStart(4, '0')}-${m.name}.sql`;
      await cp(path.join(DEFAULT_MIGRATIONS_DIRECTORY, file), path.join(directory, file));
    }
    return directory;
  }

  it('applies every migration once with version, name and checksum; reruns are no-ops; a failing one rolls back', async () => {
    const { pool } = await emptyPool();
    const migrations = await loadMigrations();
    const first = await migrate(pool, silentLogger);
    expect(first).toEqual({ applied: SHIPPED, current: LATEST });
    const rows = await applied(pool);
    expect(rows.map(({ version, name, checksum }) => ({ version, name, checksum }))).toEqual(
      migrations.map(({ version, name, checksum }) => ({ version, name, checksum })),
    );
    expect(await migrate(pool, silentLogger)).toEqual({ applied: [], current: LATEST });
    expect(await applied(pool)).toEqual(rows);

    // A migration that fails part-way is rolled back completely and stays pending.
    const broken = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
    cleanups.push(() => rm(broken, { recursive: true, force: true }));
    await cp(DEFAULT_MIGRATIONS_DIRECTORY, broken, { recursive: true });
    await writeFile(
      path.join(broken, `${NEXT}-broken.sql`),
      'CREATE TABLE half (id int);\nSELECT no_such_function();\n',
    );
    await expect(migrate(pool, silentLogger, { directory: broken })).rejects.toThrow();
    expect((await applied(pool)).map((row) => row.version)).toEqual(SHIPPED);
    expect(await pool.exists(sql.unsafe`SELECT 1 FROM pg_tables WHERE tablename = 'half'`)).toBe(false);
  });

  it('is safe when three instances migrate the same database at once', async () => {
    const { url } = await emptyPool();
    const pools = await Promise.all([1, 2, 3].map(() => createDatabasePool(url, { maximumPoolSize: 1 })));
    cleanups.push(async () => {
      await Promise.all(pools.map((pool) => pool.end()));
    });
    const results = await Promise.all(pools.map((pool) => migrate(pool, silentLogger)));
    expect(results.flatMap((result) => result.applied).sort((a, b) => a - b)).toEqual(SHIPPED);
    expect(results.every((result) => result.current === LATEST)).toBe(true);
    const [pool] = pools;
    if (!pool) throw new Error('no pool');
    expect((await applied(pool)).map((row) => row.version)).toEqual(SHIPPED);
    // The pool does not reset sessions on release, so migrate must leave its connection as it found it.
    for (const single of pools) {
      expect(await single.oneFirst(sql.unsafe`SHOW statement_timeout`)).toBe('30s');
      expect(
        await single.exists(sql.unsafe`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`),
      ).toBe(false);
    }
  });

  describe('with a copy of the migrations', () => {
    let directory: string;
    beforeAll(async () => {
      directory = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
      await cp(DEFAULT_MIGRATIONS_DIRECTORY, directory, { recursive: true });
    });
    afterAll(() => rm(directory, { recursive: true, force: true }));

    it('refuses to start when an applied migration was changed, and applies new ones', async () => {
      const { pool } = await emptyPool();
      await migrate(pool, silentLogger, { directory });

      await writeFile(
        path.join(directory, `${NEXT}-extra.sql`),
        'CREATE TABLE extra (id int);\r\nCREATE INDEX extra_idx ON extra (id);\r\n',
      );
      expect(await migrate(pool, silentLogger, { directory })).toEqual({ applied: [LATEST + 1], current: LATEST + 1 });

      await appendFile(path.join(directory, '0002-replay-attempts.sql'), '\n-- an innocent-looking edit\n');
      const refused = migrate(pool, silentLogger, { directory });
      await expect(refused).rejects.toBeInstanceOf(MigrationError);
      await expect(migrate(pool, silentLogger, { directory })).rejects.toThrow(
        /0002-replay-attempts was changed after it was applied/,
      );
      // Nothing was half-applied and the lock was released: the original files still migrate.
      expect(await migrate(pool, silentLogger)).toEqual({ applied: [], current: LATEST + 1 });
    });

    it('0005 leaves signed rows to their verified flag, token rows unchecked, and strips stored replay queries', async () => {
      const upTo4 = await migrationsUpTo(4);
      const { pool } = await emptyPool();
      expect(await migrate(pool, silentLogger, { directory: upTo4 })).toEqual({ applied: [1, 2, 3, 4], current: 4 });
      const ids = ['0188f000-0000-7000-8000-000000000001', '0188f000-0000-7000-8000-000000000002'];
      await pool.query(sql.unsafe`
        INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, payload) VALUES
          (${ids[0] ?? ''}, 'stripe', 'x', 'signed', false, 'signature mismatch (Stripe-Signature)', '\\x7b7d'::bytea),
          (${ids[1] ?? ''}, 'ci', 'x', 'token', false, 'token matched (X-Webhook-Token)', '\\x7b7d'::bytea)
      `);
      await pool.query(sql.unsafe`
        INSERT INTO replay_attempts (id, event_id, caller, target_url, delivered) VALUES
          ('0188f000-0000-7000-8000-0000000000a1', ${ids[0] ?? ''}, 'a', 'http://127.0.0.1:9/x?tok=old-secret', true),
          ('0188f000-0000-7000-8000-0000000000a2', ${ids[0] ?? ''}, 'a', 'http://127.0.0.1:9/y', true)
      `);

      expect(await migrate(pool, silentLogger)).toEqual({
        applied: SHIPPED.filter((v) => v >= 5),
        current: LATEST,
      });
      const store = createEventStore(pool);
      expect((await store.get(ids[0] ?? ''))?.passedCheck).toBe(false);
      // Nothing but the text said the token matched, and replay does not read it from text.
      expect((await store.get(ids[1] ?? ''))?.passedCheck).toBe(false);
      const attempts = await createReplayAttemptRepository(pool).listForEvent(ids[0] ?? '');
      expect(attempts.map((a) => [a.target_url, a.unsigned]).sort()).toEqual([
        ['http://127.0.0.1:9/x?…', false],
        ['http://127.0.0.1:9/y', false],
      ]);
    });

    it('0008 keeps older rows without summary or request, and checks what new rows store', async () => {
      const upTo6 = await migrationsUpTo(6);
      const { pool } = await emptyPool();
      await migrate(pool, silentLogger, { directory: upTo6 });
      const old = '0188f000-0000-7000-8000-000000000011';
      await pool.query(sql.unsafe`
        INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, payload)
        VALUES (${old}, 'hooks', 'ping', 'open', false, 'no verification: open provider', '\x7b7d'::bytea)
      `);
      await pool.query(sql.unsafe`
        INSERT INTO replay_attempts (id, event_id, caller, target_url, delivered, error_code)
        VALUES ('0188f000-0000-7000-8000-0000000000b1', ${old}, 'a', 'http://127.0.0.1:1/', false, 'replay_failed')
      `);
      expect((await migrate(pool, silentLogger)).applied).toEqual(SHIPPED.filter((v) => v > 6));

      const stored = await createEventStore(pool).get(old);
      expect({ summary: stored?.summary, request: stored?.request }).toEqual({ summary: null, request: null });
      const [attempt] = await createReplayAttemptRepository(pool).listForEvent(old);
      expect(attempt?.error_code).toBe('replay_failed');
      expect(attempt && 'error_reason' in attempt).toBe(false);

      const insert = (row: Record<string, string | number>) =>
        pool.query(sql.unsafe`
          INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, payload,
            ${sql.join(
              Object.keys(row).map((column) => sql.identifier([column])),
              sql.fragment`, `,
            )})
          VALUES (gen_random_uuid(), 'hooks', 'ping', 'open', false, 'open', '\\x7b7d'::bytea,
            ${sql.join(Object.values(row), sql.fragment`, `)})
        `);
      const request = { request_method: 'POST', request_path: '/hooks/x', request_query: '', response_status: 401 };
      await expect(insert({ summary: 'x'.repeat(121) })).rejects.toMatchObject({ constraint: 'events_summary_length' });
      await expect(insert({ summary: '' })).rejects.toMatchObject({ constraint: 'events_summary_length' });
      await expect(insert({ request_method: 'POST', response_status: 200 })).rejects.toMatchObject({
        constraint: 'events_request_complete',
      });
      await expect(insert({ ...request, response_status: 42 })).rejects.toMatchObject({
        constraint: 'events_response_status_range',
      });
      await expect(insert({ ...request, request_query: 'q'.repeat(2049) })).rejects.toMatchObject({
        constraint: 'events_request_lengths',
      });
      // 120 characters, not bytes: the limit is the contract's, which counts characters.
      await insert({ summary: 'é'.repeat(120), ...request });
      await expect(
        pool.query(sql.unsafe`
          INSERT INTO replay_attempts (id, event_id, event_received_at, caller, delivered, error_code, error_reason)
          SELECT gen_random_uuid(), id, received_at, 'a', false, 'invalid_argument', 'because' FROM events WHERE id = ${old}
        `),
      ).rejects.toMatchObject({ constraint: 'replay_attempts_error_reason_check' });
    });

    it("0013 moves a populated database's external-id keys into time partitions; retries are still duplicates", async () => {
      const upTo12 = await migrationsUpTo(12);
      const { pool } = await emptyPool();
      await migrate(pool, silentLogger, { directory: upTo12 });
      await pool.query(sql.unsafe`SELECT switchboard_ensure_partitions('day', now() - interval '3 days', now())`);
      // Written as a 0012-era writer would: the store's own insert needs the lookup of 0015.
      const insert0012 = (externalId: string | null) =>
        pool.oneFirst(sql.type(z.object({ id: z.string() }))`
          INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, headers, payload, external_id)
          VALUES (gen_random_uuid(), 'github', 'issues.opened', 'open', false, 'open', '{}'::jsonb, '\\x7b7d'::bytea, ${externalId})
          RETURNING id
        `);
      const stored = new Map<string, string>();
      for (const [externalId, at] of [
        ['today', null],
        ['three-days-ago', sql.fragment`now() - interval '3 days'`],
        ['in-default', sql.fragment`'1999-01-01T00:00:00Z'::timestamptz`],
      ] as const) {
        const id = await insert0012(externalId);
        if (at !== null) await pool.query(sql.unsafe`UPDATE events SET received_at = ${at} WHERE id = ${id}`);
        stored.set(externalId, id);
      }
      await insert0012(null);

      expect((await migrate(pool, silentLogger)).applied).toEqual(SHIPPED.filter((v) => v > 12));
      const store = createEventStore(pool);

      // Every key is in the partition of its event's range, with its event.
      const keys = await pool.any(sql.type(
        z.object({ external_id: z.string(), event_id: z.string(), ok: z.boolean() }),
      )`
        SELECT k.external_id, k.event_id, k.tableoid::regclass::text = replace(e.tableoid::regclass::text, 'events_', 'event_external_ids_') AS ok
        FROM event_external_ids k JOIN events e ON e.id = k.event_id AND e.received_at = k.received_at
        ORDER BY k.external_id
      `);
      expect(keys).toEqual(
        [...stored]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([externalId, id]) => ({ external_id: externalId, event_id: id, ok: true })),
      );
      expect(
        await pool.exists(sql.unsafe`SELECT 1 FROM pg_class WHERE relname = 'event_external_ids_unpartitioned'`),
      ).toBe(false);
      // Retries within the dedupe window (7 days, migration 0021) are duplicates; the 1999 key is
      // far outside it, so its retry is stored as a new event.
      for (const [externalId, id] of stored) {
        const retry = await store.insert(newEvent({ externalId }));
        if (externalId === 'in-default') expect(retry.duplicate).toBe(false);
        else expect(retry).toMatchObject({ duplicate: true, event: { id } });
      }
      // A range made after the migration gets its keys partition and that partition's unique index.
      await pool.query(
        sql.unsafe`SELECT switchboard_ensure_partitions('day', now() + interval '20 days', now() + interval '20 days')`,
      );
      const later = await pool.oneFirst(sql.type(z.object({ suffix: z.string() }))`
        SELECT suffix FROM event_partitions ORDER BY lower_bound DESC LIMIT 1
      `);
      expect(
        await pool.exists(sql.unsafe`SELECT 1 FROM pg_indexes WHERE indexname = ${`event_external_ids_p${later}_key`}`),
      ).toBe(true);
      const fresh = await store.insert(newEvent({ externalId: 'after-the-migration' }));
      expect(fresh.duplicate).toBe(false);
      expect((await store.insert(newEvent({ externalId: 'after-the-migration' }))).duplicate).toBe(true);
    });

    it('rejects badly named and duplicate migration files', async () => {
      const odd = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
      cleanups.push(() => rm(odd, { recursive: true, force: true }));
      await writeFile(path.join(odd, '1-bad.sql'), 'SELECT 1;');
      await expect(loadMigrations(odd)).rejects.toThrow(/NNNN-name\.sql/);
      await rm(path.join(odd, '1-bad.sql'));
      await writeFile(path.join(odd, '0001-a.sql'), 'SELECT 1;');
      await writeFile(path.join(odd, '0001-b.sql'), 'SELECT 1;');
      await expect(loadMigrations(odd)).rejects.toThrow(/share version 1/);
    });
  });
});

describe('splitSqlStatements', () => {
  it('splits on semicolons outside quotes, identifiers, dollar quotes and comments', () => {
    const text = `
      -- a comment; with a semicolon
      CREATE TABLE "odd;name" (a text DEFAULT 'x;y', b text DEFAULT E'it\\'s;');
      /* block ; /* nested ; */ still comment ; */
      CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$;
      DO $$ BEGIN PERFORM 1; END $$;
      SELECT 'it''s; fine'
    `;
    expect(splitSqlStatements(text)).toEqual([
      `-- a comment; with a semicolon
      CREATE TABLE "odd;name" (a text DEFAULT 'x;y', b text DEFAULT E'it\\'s;')`,
      `/* block ; /* nested ; */ still comment ; */
      CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END $body$`,
      'DO $$ BEGIN PERFORM 1; END $$',
      "SELECT 'it''s; fine'",
    ]);
  });

  it('drops empty and comment-only statements', () => {
    expect(splitSqlStatements(';;\n-- only a comment\n;')).toEqual([]);
  });

  it('refuses unterminated quotes instead of guessing', () => {
    expect(() => splitSqlStatements("SELECT 'open")).toThrow(SyntaxError);
    expect(() => splitSqlStatements('SELECT $x$ open')).toThrow(SyntaxError);
    expect(() => splitSqlStatements('/* open')).toThrow(SyntaxError);
  });

  it('splits the shipped migrations into the statements they contain', async () => {
    const migrations = await loadMigrations();
    expect(migrations.map((m) => m.version)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25, 27,
    ]);
    const first = (migrations[0]?.statements ?? []).map((s) => s.replace(/^(\s*--[^\n]*\n)*/, '').trim());
    expect(first.filter((s) => s.startsWith('CREATE FUNCTION'))).toHaveLength(2);
    expect(first.filter((s) => /^CREATE (UNIQUE )?INDEX/.test(s))).toHaveLength(9);
    for (const statement of migrations.flatMap((m) => m.statements)) expect(statement.endsWith(';')).toBe(false);
  });
});
