/**
 * The dedupe lookup reads keys by index even when the session's first call found the keys
 * partition empty and it has grown since: with a plan kept from the empty partition, each key of a
 * retry check read the whole partition through until autovacuum analysed it. Migration 0022 fixed
 * that by planning each call; 0027 keeps one plan per session again, with sequential scans off so
 * it cannot be one, and JIT off so that their "disabled" cost does not compile every call.
 */
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
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

/** auto_explain's plan of each statement the lookup runs, sent to this session as LOG notices. */
async function lookupPlans(url: string, calls: number): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  const plans: string[] = [];
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  await client.connect();
  try {
    await client.query(`LOAD 'auto_explain'`);
    await client.query(`SET auto_explain.log_min_duration = 0`);
    await client.query(`SET auto_explain.log_nested_statements = on`);
    await client.query(`SET client_min_messages = log`);
    for (let call = 0; call < calls; call += 1) {
      await client.query(`SELECT switchboard_external_ids_stored($1::text[], $2::text[], clock_timestamp())`, [
        ['github', 'github'],
        [`plan-${call}`, 'first'],
      ]);
    }
  } finally {
    await client.end();
  }
  return plans;
}

describe('the dedupe lookup plan', () => {
  it("is kept for the session: an index probe of the window's partitions, never JIT-compiled", async () => {
    const plans = await lookupPlans(db.url, 3);
    const probes = plans.filter((plan) => plan.includes('FROM unnest(providers, external_ids)'));
    expect(probes).toHaveLength(3);
    for (const probe of probes) {
      // A generic plan: `at` stays a parameter ($3), and the partitions outside the window are
      // pruned as each call starts. A plan made per call has the call's time in it instead.
      expect(probe).toMatch(/received_at >= \(\$3 - '7 days'::interval\)/);
      expect(probe).toMatch(/Subplans Removed: \d+/);
      // Each keys partition of the window, the empty DEFAULT one included, probed by its index.
      expect(probe).toMatch(/Index Scan using event_external_ids_p\d{8}_key on event_external_ids_p\d{8}/);
      expect(probe).toContain('Index Scan using event_external_ids_default_key on event_external_ids_default');
      expect(probe).not.toMatch(/Seq Scan on event_external_ids/);
    }
    // The bound check's sequential scan of event_partitions is costed as disabled: compiled with
    // JIT it took 25-30 ms a call.
    expect(plans.filter((plan) => plan.includes('JIT:'))).toEqual([]);
  });
});
