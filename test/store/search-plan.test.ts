/**
 * Issue 26, item 4: a payload search costs what it finds, not what the table holds. The events
 * here are stored and indexed in bulk with no ANALYZE afterwards and autovacuum off, as after an
 * import autovacuum has not reached yet: the planner then guesses every term, and used to walk
 * the whole received_at index for an OR of rare words.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListOrder } from '../../generated/constants.ts';
import type { ListQuery } from '../../src/store/events/event-store.ts';
import { buildListSql, resolveListQuery } from '../../src/store/events/list-statement.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { MAX_CANDIDATES, RECENT_ROWS_PER_ROW, searchSettings } from '../../src/store/events/search-query.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { partitionsOf } from './partition-names.ts';

const EVENTS = 20_000;
/** Words by where they occur (g is the event's number, 1 oldest): each takes another step of the search. */
const WORDS = [
  // everywhere: the first page is among the newest events
  { word: 'everywhere', when: sql.fragment`true` },
  // one event in ten: still found among the newest
  { word: 'tenth', when: sql.fragment`g % 10 = 0` },
  // one in a hundred: too few among the newest, few enough to collect from the index
  { word: 'hundredth', when: sql.fragment`g % 100 = 3` },
  // four events in all
  { word: 'scarce', when: sql.fragment`g % 5000 = 7` },
  // many, and all of them old: more than the index step takes, so the walk goes on
  { word: 'vintage', when: sql.fragment`g <= ${MAX_CANDIDATES + 1_000}` },
] as const;

let db: TestDatabase;
let store: PgEventStore;

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
  // A partitioned table keeps no rows (and takes no storage parameters): its partitions do.
  for (const partition of await partitionsOf(db.pool, ['events', 'event_search'])) {
    await db.pool.query(sql.unsafe`ALTER TABLE ${sql.identifier([partition])} SET (autovacuum_enabled = false)`);
  }
  const words = sql.join(
    WORDS.map(({ word, when }) => sql.fragment`CASE WHEN ${when} THEN ${word}::text ELSE '' END`),
    sql.fragment`, `,
  );
  await db.pool.query(sql.unsafe`
    INSERT INTO events (id, provider, event_type, trust_mode, verified, verify_detail, content_type, headers, payload, received_at)
    SELECT
      (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
      'provider-' || (g % 4), 'push', 'signed', true, 'hmac-sha256 valid', 'application/json', '{}'::jsonb,
      convert_to(json_build_object('n', g, 'text', concat_ws(' ', ${words}))::text, 'UTF8'),
      t
    FROM generate_series(1, ${EVENTS}) AS g,
      LATERAL (SELECT timestamptz '2024-01-01T00:00:00Z' + g * interval '1 second') AS at(t)
  `);
  // What the indexer does, in one statement.
  await db.pool.query(sql.unsafe`
    INSERT INTO event_search (event_id, event_received_at, payload_json, payload_tsv)
    SELECT id, received_at, switchboard_payload_jsonb(payload), switchboard_payload_tsvector(payload) FROM events
  `);
  await db.pool.query(sql.unsafe`DELETE FROM event_search_queue`);
}, 120_000);
afterAll(() => db?.close());

interface PlanNode {
  'Node Type': string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}
const planSchema = z.array(z.object({ Plan: z.custom<PlanNode>((v) => typeof v === 'object' && v !== null) }));

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The search as the store runs it (its settings, in its own transaction), executed and measured. */
async function analyze(query: ListQuery): Promise<PlanNode[]> {
  return db.pool.transaction(async (transaction) => {
    await transaction.query(searchSettings(30_000));
    const [first] = await transaction.oneFirst(
      sql.type(
        z.object({ 'QUERY PLAN': planSchema }),
      )`EXPLAIN (ANALYZE, FORMAT JSON) ${buildListSql(resolveListQuery(query))}`,
    );
    if (!first) throw new Error('no plan');
    return nodes(first.Plan);
  });
}

/** Rows a node produced over all its loops: the work it did. */
const work = (node: PlanNode): number => (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1);

/** The page as a plain query finds it: every match, sorted (what the store must agree with). */
async function expected(word: string, order: ListOrder, provider?: string): Promise<string[]> {
  const direction = order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
  return [
    ...(await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT events.id FROM events JOIN event_search ON event_search.event_id = events.id
      WHERE event_search.payload_tsv @@ websearch_to_tsquery('simple', ${word})
        ${provider === undefined ? sql.fragment`` : sql.fragment`AND events.provider = ${provider}`}
      ORDER BY events.received_at ${direction}, events.id ${direction}
    `)),
  ];
}

describe('payload search cost (20,000 events, statistics never gathered)', () => {
  it('an OR of rare words does as much work as its matches and the first page, not the table', async () => {
    for (const q of ['zq0 or zq1', 'scarce or zq1', '"zq0 zq1"', 'scarce zq0', '"scarce everywhere"']) {
      for (const order of ['newest_first', 'oldest_first'] as const) {
        const plan = await analyze({ q, order });
        const busiest = Math.max(...plan.map(work));
        // The newest-events walk (step 1) is the most any step reads: 20 per row of the page.
        expect(busiest, `${q} ${order}`).toBeLessThanOrEqual(RECENT_ROWS_PER_ROW * 51);
      }
    }
  });

  it('a common word reads only the newest events', async () => {
    const plan = await analyze({ q: 'everywhere' });
    expect(Math.max(...plan.map(work))).toBeLessThanOrEqual(RECENT_ROWS_PER_ROW * 51);
    // The index step never ran: its bitmap would have held every event.
    const bitmap = plan.filter((node) => node['Node Type'] === 'Bitmap Index Scan');
    expect(bitmap.map(work)).toEqual(bitmap.map(() => 0));
  });

  it('finds exactly what a plain query finds, whichever step settles the page, in both orders and by cursor', async () => {
    for (const { word } of WORDS) {
      for (const order of ['newest_first', 'oldest_first'] as const) {
        for (const provider of [undefined, 'provider-3']) {
          const all = await expected(word, order, provider);
          const seen: string[] = [];
          let cursor: string | undefined;
          // The first three pages (or all of them), as a client pages through.
          for (let page = 0; page < 3; page += 1) {
            const result = await store.list({
              q: word,
              order,
              limit: 50,
              ...(provider === undefined ? {} : { provider }),
              ...(cursor === undefined ? {} : { cursor }),
            });
            seen.push(...result.events.map((event) => event.id));
            cursor = result.next_cursor;
            if (cursor === undefined) break;
          }
          expect(seen, `${word} ${order} ${provider ?? ''}`).toEqual(all.slice(0, seen.length));
          expect(seen.length, `${word} ${order} ${provider ?? ''}`).toBe(Math.min(all.length, 150));
        }
      }
    }
  });

  it('never compiles a search with JIT, even where the planner would (jit_above_cost 0)', async (context) => {
    const available = await db.pool.oneFirst(sql.type(z.object({ on: z.boolean() }))`SELECT pg_jit_available() AS on`);
    // The embedded PostgreSQL is built without LLVM: there is nothing to turn off.
    if (!available) context.skip();
    const jitUsed = z.array(z.object({ JIT: z.unknown().optional() }));
    const used = await db.pool.transaction(async (transaction) => {
      await transaction.query(
        sql.unsafe`SELECT set_config('jit', 'on', true), set_config('jit_above_cost', '0', true)`,
      );
      await transaction.query(searchSettings(30_000));
      const [plan] = await transaction.oneFirst(
        sql.type(
          z.object({ 'QUERY PLAN': jitUsed }),
        )`EXPLAIN (ANALYZE, FORMAT JSON) ${buildListSql(resolveListQuery({ q: 'zq0 or zq1' }))}`,
      );
      return plan?.JIT !== undefined;
    });
    expect(used).toBe(false);
  });
});
