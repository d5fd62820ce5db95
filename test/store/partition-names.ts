/**
 * Plans over partitioned tables name each partition and each partition's own index
 * (events_default, events_p20261204_received_at_id_idx). Tests that assert which table or index a
 * plan uses compare the partitioned table or index those belong to.
 */
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

const parentRow = z.object({ child: z.string(), parent: z.string() });

/** Every partition, and every partition's index, mapped to its partitioned table or index. */
export async function partitionParents(db: CommonQueryMethods): Promise<Map<string, string>> {
  const rows = await db.any(sql.type(parentRow)`
    SELECT child.relname AS child, parent.relname AS parent
    FROM pg_inherits
    JOIN pg_class child ON child.oid = pg_inherits.inhrelid
    JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
    JOIN pg_namespace ON pg_namespace.oid = child.relnamespace
    WHERE pg_namespace.nspname = current_schema()
  `);
  return new Map(rows.map((row) => [row.child, row.parent]));
}

/** The partitions of the tables named. */
export async function partitionsOf(db: CommonQueryMethods, tables: readonly string[]): Promise<string[]> {
  const parents = await partitionParents(db);
  return [...parents].filter(([, parent]) => tables.includes(parent)).map(([child]) => child);
}
