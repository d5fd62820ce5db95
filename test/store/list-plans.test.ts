/**
 * Issue 40, part 1: a list page and its forward-state marks are planned as the few rows of the few
 * partitions they read. Over 1,000,000 events the marks of an instance with no deliveries took
 * 70 ms: PostgreSQL gave them two parallel workers over every deliveries partition, all empty and
 * never analysed (each then assumed 10 pages), and starting the workers cost 56 ms.
 *
 * Whether workers pay is a cost comparison the data decides: a cheap database reaches the plan
 * 1,000,000 events did when starting a worker costs nothing (parallel_setup_cost and
 * parallel_tuple_cost 0). So each statement the store ran is planned again that way here, in a
 * session with the store's own session settings, on a fresh migrated database with three weeks of
 * day partitions, the events of one day five days back, and nothing analysed but what the
 * migrations and the partition upkeep analyse themselves.
 */
import pg from 'pg';
import { sql, type Interceptor } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApiEventSummary } from '../../generated/types.ts';
import { forwardStates } from '../../src/store/outbox/delivery-health.ts';
import { ensurePartitions } from '../../src/store/partitions/partitions.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { seedEvents } from '../support/seed.ts';
import { partitionParents } from './partition-names.ts';

const DAY_MS = 86_400_000;
/** The day the events arrived: five days back, away from any partition bound. */
const eventsDay = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS - 5 * DAY_MS);
const suffix = eventsDay.toISOString().slice(0, 10).replaceAll('-', '');

/** The statements the store runs while recording is on, with their values. */
let recorded: Array<{ sql: string; values: readonly unknown[] }> | null = null;
const recorder: Interceptor = {
  name: 'record-statements',
  beforeQueryExecution: (_context, query) => {
    recorded?.push({ sql: query.sql, values: query.values });
    return null;
  },
};

async function statementsOf(run: () => Promise<unknown>): Promise<Array<{ sql: string; values: readonly unknown[] }>> {
  recorded = [];
  try {
    await run();
    return recorded;
  } finally {
    recorded = null;
  }
}

let db: TestDatabase;
let store: PgEventStore;
let parents: Map<string, string>;
let planner: pg.Client;

beforeAll(async () => {
  db = await freshDatabase({ interceptors: [recorder] });
  store = createEventStore(db.pool);
  for (let back = 1; back <= 14; back += 1) {
    await ensurePartitions(db.pool, 'day', new Date(Date.now() - back * DAY_MS).toISOString());
  }
  await seedEvents(db.pool, {
    count: 2_000,
    providers: 4,
    stepMs: 1_000,
    from: new Date(eventsDay.getTime() + 12 * 3_600_000).toISOString(),
  });
  parents = await partitionParents(db.pool);
  // Statements are planned in a session of their own set up as the store's connections are (its
  // session settings copied), where workers cost nothing: every statement that can be given
  // workers is.
  const settings = await db.pool.any(sql.type(z.object({ name: z.string(), setting: z.string() }))`
    SELECT name, setting FROM pg_settings WHERE source = 'session'
  `);
  planner = new pg.Client({ connectionString: db.url });
  await planner.connect();
  for (const { name, setting } of settings) {
    await planner.query(`SELECT set_config($1, $2, false)`, [name, setting]);
  }
  await planner.query(`SET parallel_setup_cost = 0`);
  await planner.query(`SET parallel_tuple_cost = 0`);
}, 120_000);
afterAll(async () => {
  await planner?.end();
  await db?.close();
});

interface PlanNode {
  'Node Type': string;
  'Parallel Aware'?: boolean;
  'Relation Name'?: string;
  /** Partitions pruned only as the statement started: planned, for nothing. */
  'Subplans Removed'?: number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** The plan of a recorded statement, planned as the store ran it (the same values). */
async function planOf(statement: { sql: string; values: readonly unknown[] }): Promise<PlanNode[]> {
  // slonik numbers its placeholders $slonik_N; plain pg wants $N.
  const text = statement.sql.replace(/\$slonik_(\d+)/g, '$$$1');
  const result = await planner.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, [
    ...statement.values,
  ]);
  const plan = result.rows[0]?.['QUERY PLAN'][0]?.Plan;
  if (!plan) throw new Error('no plan');
  return nodes(plan);
}

/** The partitions of `table` a plan reads, by name. */
const partitionsRead = (plan: readonly PlanNode[], table: string): string[] =>
  [
    ...new Set(
      plan.flatMap((node) => {
        const name = node['Relation Name'];
        return name !== undefined && parents.get(name) === table ? [name] : [];
      }),
    ),
  ].sort();

/** How many partitions were planned and then pruned as the statement started. */
const prunedLate = (plan: readonly PlanNode[]): number =>
  plan.reduce((sum, node) => sum + (node['Subplans Removed'] ?? 0), 0);

const parallel = (plan: readonly PlanNode[]): string[] =>
  plan.flatMap((node) =>
    node['Node Type'].startsWith('Gather') || node['Parallel Aware'] === true ? [node['Node Type']] : [],
  );

async function pageAndMarks(
  query: Parameters<PgEventStore['listWithSummaries']>[0],
): Promise<{ events: ApiEventSummary[]; next?: string; list: PlanNode[][]; marks: PlanNode[][] }> {
  let events: ApiEventSummary[] = [];
  let next: string | undefined;
  const listed = await statementsOf(async () => {
    const page = await store.listWithSummaries(query);
    events = page.events;
    next = page.next_cursor;
  });
  const marked = await statementsOf(() => forwardStates(db.pool, events));
  const plans = async (statements: typeof listed): Promise<PlanNode[][]> => {
    const planned: PlanNode[][] = [];
    for (const statement of statements) planned.push(await planOf(statement));
    return planned;
  };
  return { events, ...(next === undefined ? {} : { next }), list: await plans(listed), marks: await plans(marked) };
}

describe('list pages on the partitioned table (issue 40)', () => {
  it('plans no statement of a page or of its forward-state marks for parallel workers', async () => {
    for (const query of [{}, { provider: 'provider-3' }, { order: 'oldest_first' as const }]) {
      const { events, list, marks } = await pageAndMarks({ ...query, limit: 50 });
      expect(events).toHaveLength(50);
      expect(marks).toHaveLength(1);
      for (const plan of [...list, ...marks]) expect(parallel(plan), JSON.stringify(query)).toEqual([]);
    }
  });

  it('reads only the partitions of the range: the marks and a deep page read the one day of their events', async () => {
    let cursor: string | undefined;
    for (let page = 1; page < 5; page += 1) {
      cursor = (await store.listWithSummaries({ provider: 'provider-3', limit: 50, ...(cursor ? { cursor } : {}) }))
        .next_cursor;
    }
    expect(cursor).toBeDefined();
    const deep = await pageAndMarks({ provider: 'provider-3', limit: 50, ...(cursor ? { cursor } : {}) });
    expect(deep.events).toHaveLength(50);
    expect(deep.list.map((plan) => partitionsRead(plan, 'events'))).toEqual([[`events_p${suffix}`]]);
    const [marks] = deep.marks;
    expect(marks && partitionsRead(marks, 'events')).toEqual([`events_p${suffix}`]);
    expect(marks && partitionsRead(marks, 'deliveries')).toEqual([`deliveries_p${suffix}`]);
    // Pruned while planning: the other partitions were never planned at all.
    for (const plan of [...deep.list, ...deep.marks]) expect(prunedLate(plan)).toBe(0);

    // The first page reads the newest partitions first: today's, the week made ahead and the
    // DEFAULT partition's stretch after them, then older days in growing groups, never all 23.
    const first = await pageAndMarks({ limit: 50 });
    for (const plan of first.list) expect(partitionsRead(plan, 'events').length).toBeLessThanOrEqual(9);
  });

  it('plans an id lookup (an event, a since bound) over the partitions near the id alone', async () => {
    const { events } = await store.listWithSummaries({ limit: 1 });
    const id = events[0]?.id;
    if (id === undefined) throw new Error('no events');
    // The event, and the position of `since` (before the page after it).
    const lookups = [
      ...(await statementsOf(() => store.get(id))),
      ...(await statementsOf(() => store.listWithSummaries({ since: id, order: 'oldest_first', limit: 50 }))),
    ].filter((statement) => /WHERE events\.id = \$/.test(statement.sql));
    expect(lookups).toHaveLength(2);
    for (const lookup of lookups) {
      const plan = await planOf(lookup);
      expect(partitionsRead(plan, 'events')).toEqual([`events_p${suffix}`]);
      expect(prunedLate(plan)).toBe(0);
    }
  });

  it('still marks the events forwarding took, in their partition', async () => {
    const { events } = await store.listWithSummaries({ limit: 3 });
    const [taken, other] = events;
    if (!taken || !other) throw new Error('no events');
    await db.pool.query(sql.unsafe`
      INSERT INTO deliveries (id, event_id, event_received_at, rule)
      SELECT gen_random_uuid(), id, received_at, 'app' FROM events WHERE id = ${taken.id}
    `);
    expect(await forwardStates(db.pool, events)).toEqual(new Map([[taken.id, 'pending']]));
    expect(await forwardStates(db.pool, [other])).toEqual(new Map());
  });

  it('analyses every partition, old or new, as it is made', async () => {
    const partitions = await db.pool.any(sql.type(z.object({ name: z.string(), analysed: z.boolean() }))`
      SELECT c.relname AS name, c.reltuples >= 0 AS analysed
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN ('events'::regclass, 'replay_attempts'::regclass, 'deliveries'::regclass,
        'delivery_attempts'::regclass, 'event_search'::regclass, 'event_external_ids'::regclass)
    `);
    // Six tables, each with the DEFAULT partition and 22 days (two weeks back, today, a week ahead).
    expect(partitions.length).toBeGreaterThanOrEqual(6 * 23);
    expect(partitions.filter((p) => !p.analysed).map((p) => p.name)).toEqual([]);
  });
});
