/**
 * A database as a release before time partitions left it (migrations through 0010), for the
 * upgrade's test and its benchmark.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql, type CommonQueryMethods } from 'slonik';
import { DEFAULT_MIGRATIONS_DIRECTORY, loadMigrations } from '../../src/store/database/migrate.ts';

/** The last schema before time partitions. */
export const UNPARTITIONED_VERSION = 10;

/** The migrations through `version` alone, in a directory of their own, as that release shipped them. */
export async function migrationsThrough(
  version: number = UNPARTITIONED_VERSION,
): Promise<{ directory: string; remove(): Promise<void> }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'switchboard-migrations-'));
  for (const m of (await loadMigrations()).filter((m) => m.version <= version)) {
    const file = `${String(m.version).padStart(4, '0')}-${m.name}.sql`;
    await cp(path.join(DEFAULT_MIGRATIONS_DIRECTORY, file), path.join(directory, file));
  }
  return { directory, remove: () => rm(directory, { recursive: true, force: true }) };
}

/**
 * A UUIDv7 for row g received at t (in SQL, over columns `g` and `t`), as switchboard makes ids,
 * so the upgrade sees ids and times that agree.
 */
export const UUID_V7_OF_G_AT_T = sql.fragment`(lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7'
  || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid`;

/**
 * Two forward deliveries (rules a and b) for every third event, by the `n` of its JSON payload:
 * a's delivered on its first attempt, b's still pending, as 0010's schema stores them.
 */
export async function addDeliveries(pool: CommonQueryMethods): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO deliveries (id, event_id, rule, state, attempt_count)
    SELECT gen_random_uuid(), id, rule, CASE WHEN rule = 'a' THEN 'delivered' ELSE 'pending' END,
      CASE WHEN rule = 'a' THEN 1 ELSE 0 END
    FROM events, unnest(ARRAY['a', 'b']) AS rule
    WHERE (convert_from(payload, 'UTF8')::jsonb ->> 'n')::int % 3 = 0
    ORDER BY received_at, rule
  `);
  await pool.query(sql.unsafe`
    INSERT INTO delivery_attempts (delivery_id, attempt, rule, started_at, response_status, response_ms)
    SELECT id, 1, rule, created_at, 200, 3.5 FROM deliveries WHERE rule = 'a'
  `);
}
