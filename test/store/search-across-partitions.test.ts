/**
 * A search (q, match) reads a page a group of partitions at a time, newest first, as a list page
 * does (src/store/events/partition-walk.ts, docs/adr/bounded-search.md): walking every page by cursor,
 * in either order, gives exactly the events one statement over the whole table finds, in its
 * order, whether the matches span many partitions, sit on both sides of a page edge that is also
 * a partition edge, or live only in an old partition. Some events are still queued for the
 * indexer, so the queued branch is walked too. Each group's statement plans only its partitions.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListOrder } from '../../generated/constants.ts';
import type { ListQuery } from '../../src/store/events/event-store.ts';
import { buildListSql, resolveListQuery } from '../../src/store/events/list-statement.ts';
import { ensurePartitions } from '../../src/store/partitions/partitions.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { searchSettings } from '../../src/store/events/search-query.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;
let needleId = '';

// Minutes ago for each event (negative: ahead of now, in a partition made ahead, or past those in
// DEFAULT), as in list-across-partitions.test.ts. Every event says "opened"; every third "alpha";
// the one 30,000 minutes old (three weeks, an old partition) alone says "needle".
const AGES_MIN = [
  -2_000_000, -1_500, 1, 5, 5, 30, 200, 1_400, 1_500, 2_000, 3_000, 4_500, 6_000, 9_000, 9_500, 11_000, 20_000, 20_000,
  30_000, 43_000, 60_000, 2_000_000,
];
const NEEDLE_AGE = 30_000;
/** Indexes of events inserted after the indexer ran: still queued, matched by the queued branch. */
const QUEUED = new Set([2, 9, 17]);

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
  for (let day = 45; day >= 0; day -= 1) {
    await ensurePartitions(db.pool, 'day', new Date(Date.now() - day * 86_400_000).toISOString());
  }
  const insert = async (index: number, minutes: number): Promise<void> => {
    const words = ['opened', index % 3 === 0 ? 'alpha' : 'beta', minutes === NEEDLE_AGE ? 'needle' : 'hay'];
    const payload = Buffer.from(JSON.stringify({ action: 'opened', text: words.join(' '), n: index }));
    const { event } = await store.insert(newEvent({ provider: index % 2 === 0 ? 'stripe' : 'github', payload }));
    if (minutes === NEEDLE_AGE) needleId = event.id;
    await db.pool.query(
      sql.unsafe`UPDATE events SET received_at = date_trunc('minute', now()) - make_interval(mins => ${minutes}) WHERE id = ${event.id}`,
    );
  };
  for (const [index, minutes] of AGES_MIN.entries()) if (!QUEUED.has(index)) await insert(index, minutes);
  while ((await indexQueuedEvents(db.pool, 1000)) > 0);
  for (const [index, minutes] of AGES_MIN.entries()) if (QUEUED.has(index)) await insert(index, minutes);
});
afterAll(() => db.close());

/** The ids a plain statement over the whole table finds for q, in the list order. */
async function expected(q: string, order: ListOrder, provider?: string): Promise<string[]> {
  const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
  const rows = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events
    WHERE switchboard_payload_tsvector(payload) @@ websearch_to_tsquery('simple', ${q})
      ${provider === undefined ? sql.fragment`` : sql.fragment`AND provider = ${provider}`}
    ORDER BY received_at ${direction}, id ${direction}
  `);
  return [...rows];
}

/** Every id the store finds, page by page with the cursor. */
async function walked(query: ListQuery): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await store.list({ ...query, cursor });
    ids.push(...result.events.map((event) => event.id));
    if (result.next_cursor === undefined) return ids;
    cursor = result.next_cursor;
  }
  throw new Error('the walk did not end');
}

/** The partition each event is in. */
async function partitionOf(ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await db.pool.any(sql.type(z.object({ id: z.string(), partition: z.string() }))`
    SELECT id, tableoid::regclass::text AS partition FROM events WHERE id = ANY(${sql.array([...ids], 'uuid')})
  `);
  return new Map(rows.map((row) => [row.id, row.partition]));
}

describe('a search across partitions', () => {
  it('spans many partitions, some events still queued for the indexer', async () => {
    const all = await expected('opened', 'newest_first');
    expect(all).toHaveLength(AGES_MIN.length);
    expect(new Set((await partitionOf(all)).values()).size).toBeGreaterThan(10);
    const queued = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM event_search_queue
    `);
    expect(queued).toBe(QUEUED.size);
  });

  it.each(['opened', 'alpha', 'needle', 'alpha or needle', '"opened alpha"', 'hay -alpha'])(
    'finds exactly what one statement finds for %s, page by page in either order',
    async (q) => {
      for (const order of ['newest_first', 'oldest_first'] as const) {
        const want = await expected(q, order);
        expect(want.length).toBeGreaterThan(0);
        for (const limit of [1, 2, 3, 7, 50]) expect(await walked({ q, order, limit })).toEqual(want);
        expect(await walked({ q, order, limit: 2, provider: 'stripe' })).toEqual(await expected(q, order, 'stripe'));
      }
    },
  );

  it('carries the cursor across a partition edge: the next page starts in the older partition', async () => {
    const want = await expected('opened', 'newest_first');
    const partitions = await partitionOf(want);
    // The first place where two neighbours in the list are in different dated partitions.
    const edge = want.findIndex(
      (id, i) =>
        i > 0 && partitions.get(id) !== partitions.get(want[i - 1] ?? '') && /_p\d/.test(partitions.get(id) ?? ''),
    );
    expect(edge).toBeGreaterThan(0);
    const first = await store.list({ q: 'opened', limit: edge });
    expect(first.events.map((event) => event.id)).toEqual(want.slice(0, edge));
    const next = await store.list({ q: 'opened', limit: 3, cursor: first.next_cursor });
    expect(next.events.map((event) => event.id)).toEqual(want.slice(edge, edge + 3));
    expect(partitions.get(next.events[0]?.id ?? '')).not.toBe(partitions.get(want[edge - 1] ?? ''));
  });

  it('finds a rare term that only an old partition holds, on the first page, and nothing after it', async () => {
    const page = await store.list({ q: 'needle', limit: 50 });
    expect(page.events).toHaveLength(1);
    expect(page.next_cursor).toBeUndefined();
    expect(page.events.map((event) => event.id)).toEqual([needleId]);
    expect((await partitionOf([needleId])).get(needleId)).toMatch(/^events_p\d+$/);
    const json = await store.list({ match: { n: AGES_MIN.indexOf(NEEDLE_AGE) }, limit: 50 });
    expect(json.events.map((event) => event.id)).toEqual([needleId]);
  });

  it('plans only the partitions of its range when from/to bound it (what each group statement is)', async () => {
    const day = await db.pool.one(sql.type(z.object({ lower: z.string(), upper: z.string(), suffix: z.string() }))`
      SELECT lower_bound::text AS lower, upper_bound::text AS upper, suffix FROM event_partitions
      WHERE lower_bound <= now() - interval '3 weeks' AND upper_bound > now() - interval '3 weeks'
    `);
    const relations = async (query: ListQuery): Promise<Set<string>> => {
      const plan = await db.pool.transaction(async (transaction) => {
        await transaction.query(searchSettings(30_000));
        return transaction.anyFirst(sql.type(z.object({ 'QUERY PLAN': z.string() }))`
          EXPLAIN (FORMAT TEXT) ${buildListSql(resolveListQuery(query))}
        `);
      });
      return new Set([...plan.join('\n').matchAll(/ on (\w+)/g)].map((match) => match[1] ?? ''));
    };
    // Every partition and partition index the plan names, by its suffix (p20261204, default).
    const partitionsIn = async (query: ListQuery): Promise<Set<string>> =>
      new Set([...(await relations(query))].flatMap((name) => [...(/_(p\d+|default)/.exec(name)?.slice(1, 2) ?? [])]));
    for (const q of ['needle', 'alpha or needle']) {
      expect(await partitionsIn({ q, from: day.lower, to: day.upper })).toEqual(new Set([`p${day.suffix}`]));
      expect((await partitionsIn({ q })).size).toBeGreaterThan(40);
    }
  });
});
