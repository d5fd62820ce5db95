/**
 * The dedupe lookup reads keys by index even when the session's first call found the keys
 * partition empty and it has grown since (migration 0022 plans each call over the partitions as
 * they are): with a plan kept from the empty partition, each key of a retry check read the whole
 * partition through until autovacuum analysed it.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let reader: Awaited<ReturnType<typeof createDatabasePool>>;

beforeAll(async () => {
  // One connection: the store's lookups all run in the session whose plan is under test.
  db = await freshDatabase({ maximumPoolSize: 1 });
  reader = await createDatabasePool(db.url, { maximumPoolSize: 1 });
});
afterAll(async () => {
  await reader.end();
  await db.close();
});

const scansRow = z.object({ seq: z.number().int(), idx: z.number().int() });
/** seq counts rows read by sequential scans: an empty partition in the window may be scanned, for nothing. */
/** Scans of the keys partitions, as the statistics show them (flushed when a backend goes idle). */
const scans = () =>
  reader.one(sql.type(scansRow)`
    SELECT coalesce(sum(seq_tup_read), 0)::int AS seq, coalesce(sum(idx_scan), 0)::int AS idx
    FROM pg_stat_user_tables WHERE relname LIKE 'event\_external\_ids\_%'
  `);

describe('the dedupe lookup', () => {
  it('probes the keys index after the partition it planned over empty has grown', async () => {
    const store = createEventStore(db.pool);
    // The first lookup of the session: today's keys partition is empty, and the plan is kept.
    await store.insertMany([newEvent({ provider: 'github', externalId: 'first' })]);
    await db.pool.query(sql.unsafe`
      INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
      SELECT 'github', 'filler-' || n, gen_random_uuid(), now() FROM generate_series(1, 5000) AS n
    `);
    // Let the backend's counts so far reach the statistics before they are read.
    await db.pool.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
    await delay(200);
    const before = await scans();

    const keys = Array.from({ length: 32 }, (_, n) => `new-${n}`);
    const results = await store.insertMany(keys.map((externalId) => newEvent({ provider: 'github', externalId })));
    expect(results.every((result) => !result.duplicate)).toBe(true);
    await db.pool.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);

    let after = await scans();
    for (let tries = 0; tries < 50 && after.idx === before.idx && after.seq === before.seq; tries += 1) {
      await delay(100);
      after = await scans();
    }
    // Each of the 32 keys was probed by index; no row of a partition was read through.
    expect(after.idx - before.idx).toBeGreaterThanOrEqual(keys.length);
    expect(after.seq - before.seq).toBe(0);
  });
});
