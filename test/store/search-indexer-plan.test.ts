/**
 * The indexer's batch fetches each queued event by its primary key whatever the statistics say. On
 * a partition nothing had analysed, the planner took `events.id = …` to match 0.5 % of its rows and
 * hash-joined the batch against a sequential scan of the whole partition: each batch cost more as
 * the table grew, and on a server with autovacuum off search fell 150 s behind in 5 minutes at
 * 1,000 events/s. Counted here by the rows sequential scans read from `events`' partitions.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { seedEvents } from '../support/seed.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db.close();
});

const readRow = z.object({ seq: z.number().int() });
/** Rows read by sequential scans of events' partitions, as the statistics show them. */
async function seqRowsRead(): Promise<number> {
  await db.pool.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await delay(100);
  const row = await db.pool.one(sql.type(readRow)`
    SELECT coalesce(sum(seq_tup_read), 0)::int AS seq FROM pg_stat_user_tables
    WHERE relname LIKE 'events\_p%' OR relname = 'events_default'
  `);
  return row.seq;
}

describe('the search indexer batch', () => {
  it('reads no partition of events through on a table nothing has analysed', async () => {
    // Received now, so today's dated partition holds them; never analysed (no ANALYZE here, and the
    // shared test server runs with autovacuum off).
    await seedEvents(db.pool, { count: 5_000, providers: 3, from: new Date().toISOString(), stepMs: 1 });
    const before = await seqRowsRead();
    expect(await indexQueuedEvents(db.pool, 200)).toBe(200);
    const after = await seqRowsRead();
    expect(after - before).toBe(0);
  });
});
