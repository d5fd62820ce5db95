/**
 * A search whose first group of partitions held a full step 1 of events but not the page takes the
 * rest of its range in two statements (searchRest, docs/adr/partition-plans.md): the GIN index's
 * matches over every later partition at once, then those events by key. Walking every page by
 * cursor, in either order, with and without a filter, must give exactly what one plain statement
 * over the table finds, old matches still queued for the indexer included; a first group too short
 * for a full step 1 walks on group by group as before.
 */
import { sql, type Interceptor } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListOrder } from '../../generated/constants.ts';
import type { ListQuery } from '../../src/store/events/event-store.ts';
import { ensurePartitions } from '../../src/store/partitions/partitions.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { RECENT_ROWS_PER_ROW } from '../../src/store/events/search-query.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { seedEvents } from '../support/seed.ts';

/** Events received in the last half minute, in today's partition: the first group of a newest-first walk. */
const RECENT = 120;
/** Days back of the older events, each with a word or two; the indexes in QUEUED are left unindexed. */
const OLD: ReadonlyArray<[number, string]> = [
  [1, 'needle'],
  [2, 'haystack'],
  [3, 'needle haystack'],
  [4, 'hay'],
  [6, 'needle'],
  [9, 'haystack'],
  [12, 'needle'],
  [15, 'haystack needle'],
];
const QUEUED = new Set([2, 6]);

let db: TestDatabase;
let store: PgEventStore;
let recording: string[] | null = null;
const recorder: Interceptor = {
  name: 'record-search-statements',
  beforeQueryExecution: (_context, query) => {
    recording?.push(query.sql);
    return null;
  },
};

beforeAll(async () => {
  db = await freshDatabase({ interceptors: [recorder] });
  store = createEventStore(db.pool);
  for (let day = 20; day >= 1; day -= 1) {
    await ensurePartitions(db.pool, 'day', new Date(Date.now() - day * 86_400_000).toISOString());
  }
  await seedEvents(db.pool, {
    count: RECENT,
    providers: 2,
    stepMs: 100,
    from: new Date(Date.now() - 30_000).toISOString(),
  });
  const insert = async (index: number, [days, words]: [number, string]): Promise<void> => {
    const payload = Buffer.from(JSON.stringify({ action: 'opened', text: words, n: index }));
    const { event } = await store.insert(newEvent({ provider: `provider-${index % 2}`, payload }));
    await db.pool.query(
      sql.unsafe`UPDATE events SET received_at = now() - make_interval(days => ${days}) WHERE id = ${event.id}`,
    );
  };
  for (const [index, old] of OLD.entries()) if (!QUEUED.has(index)) await insert(index, old);
  while ((await indexQueuedEvents(db.pool, 1000)) > 0);
  for (const [index, old] of OLD.entries()) if (QUEUED.has(index)) await insert(index, old);
}, 120_000);
afterAll(() => db?.close());

async function expected(q: string, order: ListOrder, provider?: string): Promise<string[]> {
  const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
  return [
    ...(await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM events
      WHERE switchboard_payload_tsvector(payload) @@ websearch_to_tsquery('simple', ${q})
        ${provider === undefined ? sql.fragment`` : sql.fragment`AND provider = ${provider}`}
      ORDER BY received_at ${direction}, id ${direction}
    `)),
  ];
}

/** Every id the store finds page by page, and whether a page took the rest in two statements. */
async function walked(query: ListQuery): Promise<{ ids: string[]; restInTwo: boolean }> {
  const ids: string[] = [];
  let restInTwo = false;
  let cursor: string | undefined;
  for (let page = 0; page < 50; page += 1) {
    recording = [];
    const result = await store.list({ ...query, ...(cursor === undefined ? {} : { cursor }) });
    restInTwo ||= recording.some((statement) => statement.includes('AS candidates(event_id, event_received_at)'));
    recording = null;
    ids.push(...result.events.map((event) => event.id));
    if (result.next_cursor === undefined) return { ids, restInTwo };
    cursor = result.next_cursor;
  }
  throw new Error('the walk did not end');
}

describe('a rare term past the first group of partitions', () => {
  it('is found exactly, page by page in either order, old queued matches included', async () => {
    const queuedLeft = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM event_search_queue
    `);
    expect(queuedLeft).toBe(QUEUED.size);
    for (const q of ['needle', 'needle or haystack', 'haystack -needle']) {
      for (const order of ['newest_first', 'oldest_first'] as const) {
        const want = await expected(q, order);
        expect(want.length).toBeGreaterThan(0);
        for (const limit of [1, 2, 3]) expect((await walked({ q, order, limit })).ids, `${q} ${order}`).toEqual(want);
        expect((await walked({ q, order, limit: 1, provider: 'provider-1' })).ids).toEqual(
          await expected(q, order, 'provider-1'),
        );
      }
    }
  });

  it('takes the rest in two statements only after a first group that held a full step 1', async () => {
    // limit 1: step 1 walks RECENT_ROWS_PER_ROW × 2 events, and today holds more.
    expect(RECENT_ROWS_PER_ROW * 2).toBeLessThanOrEqual(RECENT);
    expect((await walked({ q: 'needle', limit: 1 })).restInTwo).toBe(true);
    // limit 7: step 1 walks more than today holds, so the term may well be common: walk on.
    expect(RECENT_ROWS_PER_ROW * 8).toBeGreaterThan(RECENT);
    const short = await walked({ q: 'needle', limit: 7 });
    expect(short.restInTwo).toBe(false);
    expect(short.ids).toEqual(await expected('needle', 'newest_first'));
  });
});
