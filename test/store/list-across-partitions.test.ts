/**
 * Newest-first pages over events spread across many days, and so many time partitions: walking
 * every page by cursor gives every event exactly once, in the unbounded query's order.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventStore, type PgEventStore } from '../../src/store/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;

// Minutes ago for each event: a few in the last day, some within the week, the rest older, and
// two sharing one instant so the id breaks the tie across a page edge.
const AGES_MIN = [
  1, 5, 5, 30, 200, 1_500, 2_000, 3_000, 4_500, 6_000, 9_000, 9_500, 11_000, 20_000, 20_000, 30_000, 43_000, 60_000,
];

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
  for (const [index, minutes] of AGES_MIN.entries()) {
    const { event } = await store.insert(newEvent({ provider: index % 3 === 0 ? 'stripe' : 'github' }));
    await db.pool.query(
      sql.unsafe`UPDATE events SET received_at = date_trunc('minute', now()) - make_interval(mins => ${minutes}) WHERE id = ${event.id}`,
    );
  }
});
afterAll(() => db.close());

/** Every id, newest first, by the unbounded query the windows must agree with. */
async function expected(provider?: string): Promise<string[]> {
  const rows = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events ${provider === undefined ? sql.fragment`` : sql.fragment`WHERE provider = ${provider}`}
    ORDER BY received_at DESC, id DESC
  `);
  return [...rows];
}

/** Every id, walking newest-first pages of `limit` with the cursor. */
async function walked(limit: number, provider?: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await store.list({ limit, provider, cursor });
    ids.push(...result.events.map((event) => event.id));
    if (result.next_cursor === undefined) return ids;
    cursor = result.next_cursor;
  }
  throw new Error('the walk did not end');
}

describe('newest-first pages across partitions', () => {
  it.each([1, 2, 3, 4, 5, 7, 17, 18, 50])('walk every event exactly once, in order, %i at a time', async (limit) => {
    expect(await walked(limit)).toEqual(await expected());
  });

  it('agree with the unbounded query under a filter that leaves the recent window short', async () => {
    for (const limit of [1, 2, 4, 10]) expect(await walked(limit, 'stripe')).toEqual(await expected('stripe'));
  });

  it('keep an explicit lower bound: since a time returns only what follows it, in full', async () => {
    const since = new Date(Date.now() - 5_000 * 60_000).toISOString();
    const page = await store.list({ limit: 50, since });
    const all = await expected();
    const ages = [...AGES_MIN].sort((a, b) => a - b);
    expect(page.events.map((event) => event.id)).toEqual(all.slice(0, ages.filter((m) => m < 5_000).length));
  });
});
