import { sql, type QuerySqlToken } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildListSql, resolveListQuery, type ResolvedListQuery } from '../../src/store/events/list-statement.ts';
import type { ListQuery } from '../../src/store/events/event-store.ts';
import { encodeCursor } from '../../src/store/events/cursor.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { microsFromRfc3339 } from '../../src/store/sql/timestamps.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import { searchSettings } from '../../src/store/events/search-query.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { seedEvents } from '../support/seed.ts';
import { partitionParents } from './partition-names.ts';

let db: TestDatabase;
let middle: { receivedAt: string; id: string };
let parents: Map<string, string>;

beforeAll(async () => {
  db = await freshDatabase();
  await seedEvents(db.pool, { count: 10_000, providers: 10 });
  while ((await indexQueuedEvents(db.pool, 5000)) > 0);
  await db.pool.query(sql.unsafe`VACUUM ANALYZE events, event_search, event_search_queue`);
  const row = await db.pool.one(sql.type(z.object({ received_at_utc: z.string(), id: z.string() }))`
    SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_at_utc, id::text
    FROM events ORDER BY received_at DESC, id DESC OFFSET 5000 LIMIT 1
  `);
  middle = { receivedAt: row.received_at_utc, id: row.id };
  parents = await partitionParents(db.pool);
}, 60_000);
afterAll(() => db.close());

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

const planSchema = z.array(
  z.object({ Plan: z.custom<PlanNode>((value) => typeof value === 'object' && value !== null) }),
);

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** A partition's table or index, named as the partitioned table or index it belongs to. */
function asParent(node: PlanNode): PlanNode {
  const parentOf = (name: string | undefined) => (name === undefined ? undefined : (parents.get(name) ?? name));
  const named: PlanNode = { ...node };
  const index = parentOf(node['Index Name']);
  const relation = parentOf(node['Relation Name']);
  if (index !== undefined) named['Index Name'] = index;
  if (relation !== undefined) named['Relation Name'] = relation;
  return named;
}

/** The plan of a list query; a search (q, match) planned as the store runs it, under its settings. */
async function explain(query: QuerySqlToken, options: { search?: boolean } = {}): Promise<PlanNode[]> {
  const result = await db.pool.transaction(async (transaction) => {
    if (options.search === true) await transaction.query(searchSettings(30_000));
    return transaction.oneFirst(sql.type(z.object({ 'QUERY PLAN': planSchema }))`EXPLAIN (FORMAT JSON) ${query}`);
  });
  const [first] = result;
  if (!first) throw new Error('no plan');
  return nodes(first.Plan).map(asParent);
}

/** since/until given as event ids, resolved (as the store does) to the position of the middle event. */
type Bound = 'since id' | 'until id';

function resolved(query: ListQuery, bound?: Bound, withCursor = false): ResolvedListQuery {
  let base = resolveListQuery(query);
  if (withCursor) {
    // A cursor the store would have handed out for this very query, half-way down the list.
    const cursor = encodeCursor({
      receivedAtMicros: microsFromRfc3339(middle.receivedAt) ?? 0n,
      id: middle.id,
      fingerprint: base.fingerprint,
    });
    base = resolveListQuery({ ...query, cursor });
  }
  if (bound === 'since id') return { ...base, after: middle };
  if (bound === 'until id') return { ...base, upTo: middle };
  return base;
}

const oldest = { order: 'oldest_first' } as const;

const shapes: Array<[string, ListQuery, Bound?]> = [
  ['no filter', {}],
  ['provider', { provider: 'provider-3' }],
  ['exact event_type', { eventType: 'issues.opened' }],
  ['dotless event_type (family)', { eventType: 'issues' }],
  ['provider + exact event_type', { provider: 'provider-3', eventType: 'push' }],
  ['provider + dotless event_type', { provider: 'provider-3', eventType: 'pull_request' }],
  ['since timestamp', { since: '2024-01-01T00:01:00Z' }],
  ['since event id', {}, 'since id'],
  ['provider + since event id', { provider: 'provider-5' }, 'since id'],
  ['until timestamp', { until: '2024-01-01T00:01:00Z' }],
  ['until event id', {}, 'until id'],
  ['from/to window', { from: '2024-01-01T00:00:30Z', to: '2024-01-01T00:01:30Z' }],
  ['verified', { verified: true }],
  ['limit 200', { limit: 200 }],
  ['oldest first', oldest],
  ['oldest first, provider', { ...oldest, provider: 'provider-3' }],
  ['oldest first, exact event_type', { ...oldest, eventType: 'issues.opened' }],
  ['oldest first, provider + dotless event_type', { ...oldest, provider: 'provider-3', eventType: 'pull_request' }],
  ['oldest first, since event id (catch-up)', oldest, 'since id'],
  ['oldest first, provider + since event id', { ...oldest, provider: 'provider-5' }, 'since id'],
  ['oldest first, since timestamp', { ...oldest, since: '2024-01-01T00:01:00Z' }],
  ['oldest first, until event id', oldest, 'until id'],
  ['oldest first, verified', { ...oldest, verified: false }],
];

describe('list query plans (10,000 events)', () => {
  it.each(shapes)('%s: an index scan and no sort, first page and by cursor', async (_label, query, bound) => {
    for (const withCursor of [false, true]) {
      const plan = await explain(buildListSql(resolved(query, bound, withCursor)));
      const types = plan.map((node) => node['Node Type']);
      expect(types.some((type) => type === 'Index Scan' || type === 'Index Only Scan')).toBe(true);
      expect(types.filter((type) => /Sort/.test(type))).toEqual([]);
      expect(types).not.toContain('Seq Scan');
    }
  });

  it('provider + exact event_type is served by the provider + family index (0009 dropped the per-type ones)', async () => {
    for (const order of ['newest_first', 'oldest_first'] as const) {
      const query = { provider: 'provider-3', eventType: 'issues.opened', order } as const;
      const plan = await explain(buildListSql(resolved(query)));
      expect(plan.map((node) => node['Index Name'])).toContain('events_provider_family_received_idx');
    }
  });

  it('uses the GIN indexes for payload search and JSON containment', async () => {
    const q = await explain(buildListSql(resolved({ q: 'user123' })), { search: true });
    expect(q.map((node) => node['Index Name'])).toContain('event_search_tsv_idx');
    const match = await explain(buildListSql(resolved({ match: { sender: { login: 'user123' } } })), {
      search: true,
    });
    expect(match.map((node) => node['Index Name'])).toContain('event_search_json_idx');
  });

  it('never scans all events for a search, whether the term is rare or common and with events waiting for the indexer', async () => {
    // Queued events are matched on the fly; that must cost a lookup per queued event, not a scan.
    const store = createEventStore(db.pool);
    await store.insertMany([newEvent({ payload: Buffer.from('{"action":"opened","note":"queued"}') }), newEvent()]);
    await db.pool.query(sql.unsafe`ANALYZE event_search_queue`);
    const searches: ListQuery[] = [
      { q: 'user123' },
      { q: 'opened' },
      { match: { sender: { login: 'user123' } } },
      { match: { action: 'opened' } },
      { q: 'opened', provider: 'provider-3' },
      { q: 'opened', order: 'oldest_first' },
      { match: { action: 'opened' }, order: 'oldest_first' },
      { q: 'user123', order: 'oldest_first' },
    ];
    for (const search of searches) {
      for (const withCursor of [false, true]) {
        const plan = await explain(buildListSql(resolved(search, undefined, withCursor)), { search: true });
        const scans = plan.filter((node) => node['Node Type'] === 'Seq Scan').map((node) => node['Relation Name']);
        expect(scans, JSON.stringify(search)).not.toContain('events');
        expect(scans, JSON.stringify(search)).not.toContain('event_search');
      }
    }
    // A common term walks the received_at index instead of collecting every match and sorting them.
    const common = await explain(buildListSql(resolved({ q: 'opened' })), { search: true });
    expect(common.map((node) => node['Index Name'])).toContain('events_received_idx');
    const commonOldest = await explain(buildListSql(resolved({ q: 'opened', order: 'oldest_first' })), {
      search: true,
    });
    expect(commonOldest.map((node) => node['Index Name'])).toContain('events_received_idx');
  });
});
