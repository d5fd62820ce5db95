/**
 * Pages over events spread across many days, and so many time partitions (and the DEFAULT one,
 * and the partitions made ahead of now): walking every page by cursor, in either order and under
 * filters and time bounds, gives every event exactly once, in the unbounded query's order. The
 * store reads a page a few partitions at a time (src/store/events/partition-walk.ts); the expected order
 * comes from one statement over the whole table.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListOrder } from '../../generated/constants.ts';
import { ensurePartitions } from '../../src/store/partitions/partitions.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;

// Minutes ago for each event: a few in the last day, some within the week, the rest older, and
// two sharing one instant so the id breaks the tie across a page edge.
// Negative ages are in the future: within the partitions made ahead (-1,500, -4,000), and past
// them, in the DEFAULT partition (-2,000,000), as is the oldest (2,000,000 minutes: ~4 years).
const AGES_MIN = [
  -2_000_000, -4_000, -1_500, 1, 5, 5, 30, 200, 1_500, 2_000, 3_000, 4_500, 6_000, 9_000, 9_500, 11_000, 20_000, 20_000,
  30_000, 43_000, 60_000, 2_000_000,
];

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
  // Day partitions back over the events' 42 days, as a server running that long would have made.
  for (let day = 45; day >= 0; day -= 1) {
    await ensurePartitions(db.pool, 'day', new Date(Date.now() - day * 86_400_000).toISOString());
  }
  for (const [index, minutes] of AGES_MIN.entries()) {
    const { event } = await store.insert(newEvent({ provider: index % 3 === 0 ? 'stripe' : 'github' }));
    await db.pool.query(
      sql.unsafe`UPDATE events SET received_at = date_trunc('minute', now()) - make_interval(mins => ${minutes}) WHERE id = ${event.id}`,
    );
  }
});
afterAll(() => db.close());

/** Every id, by the unbounded query the pages must agree with. */
async function expected(provider?: string, order: ListOrder = 'newest_first'): Promise<string[]> {
  const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
  const rows = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events ${provider === undefined ? sql.fragment`` : sql.fragment`WHERE provider = ${provider}`}
    ORDER BY received_at ${direction}, id ${direction}
  `);
  return [...rows];
}

/** Every id, walking pages of `limit` with the cursor. */
async function walked(limit: number, provider?: string, order?: ListOrder): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await store.list({ limit, provider, cursor, order });
    ids.push(...result.events.map((event) => event.id));
    if (result.next_cursor === undefined) return ids;
    cursor = result.next_cursor;
  }
  throw new Error('the walk did not end');
}

describe('pages across partitions', () => {
  it('has events in the DEFAULT partition and in a partition made ahead of now', async () => {
    const where = await db.pool.anyFirst(sql.type(z.object({ partition: z.string() }))`
      SELECT DISTINCT tableoid::regclass::text AS partition FROM events
    `);
    expect(where).toContain('events_default');
    const ahead = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM events JOIN event_partitions ON received_at >= lower_bound AND received_at < upper_bound
      WHERE lower_bound > now()
    `);
    expect(ahead).toBeGreaterThan(0);
    expect(where.length).toBeGreaterThan(10);
  });

  it.each([1, 2, 3, 7, 21, 22, 50])('walk every event exactly once oldest first, %i at a time', async (limit) => {
    expect(await walked(limit, undefined, 'oldest_first')).toEqual(await expected(undefined, 'oldest_first'));
  });

  it('agree with the unbounded query within since/until and from/to bounds, in either order', async () => {
    const times = await db.pool.anyFirst(sql.type(z.object({ at: z.string() }))`
      SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM events
      ORDER BY received_at DESC, id DESC
    `);
    const at = (index: number): string => times[index] ?? '';
    const within = async (where: ReturnType<typeof sql.fragment>, order: ListOrder): Promise<string[]> => {
      const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
      const rows = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM events WHERE ${where} ORDER BY received_at ${direction}, id ${direction}
      `);
      return [...rows];
    };
    for (const order of ['newest_first', 'oldest_first'] as const) {
      for (const [low, high] of [
        [15, 4],
        [21, 1],
        [21, 0],
        [9, 8],
        [5, 2],
      ] as const) {
        const since = at(low);
        const until = at(high);
        const page = await store.list({ limit: 50, order, since, until });
        expect(page.events.map((event) => event.id)).toEqual(
          await within(
            sql.fragment`received_at > ${since}::timestamptz AND received_at <= ${until}::timestamptz`,
            order,
          ),
        );
        const windowed = await store.list({ limit: 50, order, from: since, to: until });
        expect(windowed.events.map((event) => event.id)).toEqual(
          await within(
            sql.fragment`received_at >= ${since}::timestamptz AND received_at < ${until}::timestamptz`,
            order,
          ),
        );
        expect(windowed.events.length).toBeGreaterThan(0);
      }
    }
  });

  it('walk every event exactly once under since/until, 3 at a time', async () => {
    const times = await db.pool.anyFirst(sql.type(z.object({ at: z.string() }))`
      SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM events
      ORDER BY received_at DESC, id DESC
    `);
    const [since, until] = [times[19] ?? '', times[1] ?? ''];
    for (const order of ['newest_first', 'oldest_first'] as const) {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const result = await store.list({ limit: 3, order, since, until, cursor });
        ids.push(...result.events.map((event) => event.id));
        cursor = result.next_cursor;
      } while (cursor !== undefined);
      const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
      const want = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM events WHERE received_at > ${since}::timestamptz AND received_at <= ${until}::timestamptz
        ORDER BY received_at ${direction}, id ${direction}
      `);
      expect(ids).toEqual(want);
      expect(ids.length).toBeGreaterThan(10);
    }
  });

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
