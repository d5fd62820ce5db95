import { sql, type DatabasePool } from 'slonik';

/**
 * Every row of every table with its xmin and ctid: an INSERT adds a row, a DELETE removes one,
 * and any UPDATE (even one writing the same values) gives the row a new version with a new xmin
 * and ctid. Two equal snapshots therefore prove that no row was written in between, immediately,
 * unlike pg_stat_user_tables, whose counters other backends flush up to seconds later.
 */
export async function snapshotTables(pool: DatabasePool): Promise<Record<string, string[]>> {
  const tables = await pool.anyFirst(sql.unsafe`
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
    ORDER BY table_name
  `);
  const out: Record<string, string[]> = {};
  for (const table of tables) {
    const name = String(table);
    const rows = await pool.anyFirst(sql.unsafe`
      SELECT jsonb_build_object('xmin', t.xmin::text, 'ctid', t.ctid::text, 'row', to_jsonb(t))::text AS line
      FROM ${sql.identifier(['public', name])} AS t ORDER BY t.ctid
    `);
    out[name] = rows.map(String);
  }
  return out;
}
