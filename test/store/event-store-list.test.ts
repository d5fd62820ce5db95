import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateListWebhookEventsOutput } from '../../generated/validators.js';
import type { ListOrder } from '../../generated/constants.ts';
import type { EventSummary } from '../../generated/types.ts';
import { AppError } from '../../src/errors/app-error.ts';
import type { ListQuery } from '../../src/store/events/event-store.ts';
import { resolveListQuery } from '../../src/store/events/list-statement.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { insertAt, newEvent, setReceivedAt } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;

/** Fixture: ids by label, each with a distinct received_at one second apart (t0 oldest). */
const ids = new Map<string, string>();
const fixture: Array<[label: string, provider: string, eventType: string, extra?: Parameters<typeof newEvent>[0]]> = [
  ['gh-issues', 'github', 'issues'],
  ['gh-issues-opened', 'github', 'issues.opened'],
  ['gh-issues-closed', 'github', 'issues.closed'],
  ['gh-issue-comment', 'github', 'issue_comment.created'],
  ['gh-issuesx', 'github', 'issuesx.opened'],
  ['gh-push', 'github', 'push'],
  [
    'st-pi',
    'stripe',
    'payment_intent.succeeded',
    { payload: Buffer.from('{"object":"payment_intent","amount":4200,"currency":"eur"}') },
  ],
  [
    'st-charge',
    'stripe',
    'charge.refunded',
    { payload: Buffer.from('{"object":"charge","amount":100,"note":"refund for order 77"}') },
  ],
  ['q-order', 'orders', 'order.created.v2', { trustMode: 'queue', verified: false }],
  ['open-ping', 'hooks', 'ping', { trustMode: 'open', verified: false, payload: Buffer.from([0xff, 0xfe]) }],
];
const times = fixture.map((_, i) => `2024-05-01T12:00:${String(i).padStart(2, '0')}.000001Z`);

beforeAll(async () => {
  db = await freshDatabase({ maximumPoolSize: 6 });
  store = createEventStore(db.pool);
  for (const [i, [label, provider, eventType, extra]] of fixture.entries()) {
    const { event } = await store.insert(newEvent({ provider, eventType, ...extra }));
    ids.set(label, event.id);
    await setReceivedAt(db.pool, [event.id], times[i] ?? '');
  }
});
afterAll(() => db.close());

const labels = (events: readonly EventSummary[]): string[] =>
  events.map((event) => [...ids.entries()].find(([, id]) => id === event.id)?.[0] ?? `?${event.id}`);

async function list(query: ListQuery): Promise<string[]> {
  const page = await store.list(query);
  expect(validateListWebhookEventsOutput(page)).toBe(true);
  return labels(page.events);
}

async function expectInvalid(query: ListQuery, message: RegExp): Promise<void> {
  const error: unknown = await store.list(query).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect(error).toMatchObject({ code: 'invalid_argument' });
  if (error instanceof Error) expect(error.message).toMatch(message);
}

const newestFirst = [...fixture.map(([label]) => label)].reverse();

describe('list', () => {
  it('returns everything newest first by default', async () => {
    expect(await list({})).toEqual(newestFirst);
  });

  it('filters by provider', async () => {
    expect(await list({ provider: 'stripe' })).toEqual(['st-charge', 'st-pi']);
    expect(await list({ provider: 'nobody' })).toEqual([]);
  });

  it('matches a dotted event_type exactly', async () => {
    expect(await list({ eventType: 'issues.opened' })).toEqual(['gh-issues-opened']);
    expect(await list({ eventType: 'order.created' })).toEqual([]);
    expect(await list({ eventType: 'order.created.v2' })).toEqual(['q-order']);
  });

  it('matches a dotless event_type and its dotted sub-types, nothing that merely shares the prefix', async () => {
    expect(await list({ eventType: 'issues' })).toEqual(['gh-issues-closed', 'gh-issues-opened', 'gh-issues']);
    expect(await list({ eventType: 'order' })).toEqual(['q-order']);
    expect(await list({ eventType: 'issue' })).toEqual([]);
    expect(await list({ eventType: 'push' })).toEqual(['gh-push']);
  });

  it('combines filters', async () => {
    expect(await list({ provider: 'github', eventType: 'issues' })).toEqual([
      'gh-issues-closed',
      'gh-issues-opened',
      'gh-issues',
    ]);
    expect(await list({ provider: 'stripe', eventType: 'issues' })).toEqual([]);
    expect(await list({ provider: 'github', eventType: 'push', since: '2024-05-01T12:00:00Z' })).toEqual(['gh-push']);
  });

  it('treats since as a timestamp strictly before the events returned', async () => {
    expect(await list({ since: times[7] })).toEqual(['open-ping', 'q-order']);
    expect(await list({ since: '2024-05-01T12:00:07Z' })).toEqual(['open-ping', 'q-order', 'st-charge']);
    expect(await list({ since: '2024-05-01T14:00:07+02:00' })).toEqual(['open-ping', 'q-order', 'st-charge']);
    expect(await list({ since: '2024-05-01' })).toEqual(newestFirst);
    expect(await list({ since: '2024-05-02' })).toEqual([]);
  });

  it('treats since as an event id: only events after it', async () => {
    expect(await list({ since: ids.get('st-charge') })).toEqual(['open-ping', 'q-order']);
    expect(await list({ since: ids.get('gh-issues'), eventType: 'issues' })).toEqual([
      'gh-issues-closed',
      'gh-issues-opened',
    ]);
    expect(await list({ since: ids.get('open-ping') })).toEqual([]);
  });

  it('rejects an unknown since id and garbage since values', async () => {
    await expectInvalid({ since: '01900000-0000-7000-8000-000000000000' }, /no event with id/);
    await expectInvalid({ since: 'last tuesday' }, /since must be an ISO-8601 time .* or an event id/);
    await expectInvalid({ since: '' }, /since/);
    await expectInvalid({ since: '2024-02-30' }, /since/);
  });

  it('applies from (inclusive), to (exclusive), verified, q and match', async () => {
    expect(await list({ from: times[7], to: times[9] })).toEqual(['q-order', 'st-charge']);
    expect(await list({ verified: false })).toEqual(['open-ping', 'q-order']);
    expect(await list({ q: 'refund' })).toEqual(['st-charge']);
    expect(await list({ q: '"refund for order"' })).toEqual(['st-charge']);
    expect(await list({ q: 'eur OR refund' })).toEqual(['st-charge', 'st-pi']);
    expect(await list({ match: { object: 'payment_intent' } })).toEqual(['st-pi']);
    expect(await list({ match: { amount: 100 }, provider: 'stripe' })).toEqual(['st-charge']);
    expect(await list({ match: { object: 'nothing' } })).toEqual([]);
    await expectInvalid({ q: '   ' }, /q must not be blank/);
    await expectInvalid({ match: ['x'] as unknown as Record<string, unknown> }, /match must be a JSON object/);
    await expectInvalid({ match: { a: '\u0000' } }, /NUL/);
    await expectInvalid({ from: 'soon' }, /from/);
  });

  it('rejects empty and oversized filters', async () => {
    await expectInvalid({ provider: '' }, /provider/);
    await expectInvalid({ eventType: '' }, /event_type/);
    await expectInvalid({ eventType: 'x'.repeat(201) }, /event_type/);
    await expectInvalid({ provider: 'a\u0000b' }, /NUL/);
  });

  it('accepts limits from 1 to 200 (default 50) and rejects the rest', async () => {
    expect(await list({ limit: 1 })).toEqual(newestFirst.slice(0, 1));
    expect((await store.list({ limit: 200 })).events.length).toBeLessThanOrEqual(200);
    for (const limit of [0, -1, 201, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expectInvalid({ limit }, /limit must be an integer from 1 to 200/);
    }
    await expectInvalid({ limit: '10' as unknown as number }, /limit/);
  });

  it('gives next_cursor only when the page was truncated', async () => {
    const exact = await store.list({ provider: 'stripe', limit: 2 });
    expect(exact.events).toHaveLength(2);
    expect(exact.next_cursor).toBeUndefined();
    expect('next_cursor' in exact).toBe(false);

    const first = await store.list({ provider: 'github', limit: 4 });
    expect(labels(first.events)).toEqual(['gh-push', 'gh-issuesx', 'gh-issue-comment', 'gh-issues-closed']);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await store.list({ provider: 'github', limit: 4, cursor: first.next_cursor });
    expect(labels(second.events)).toEqual(['gh-issues-opened', 'gh-issues']);
    expect(second.next_cursor).toBeUndefined();
  });

  it('rejects malformed cursors as invalid_argument, never a 500', async () => {
    const { next_cursor: cursor } = await store.list({ limit: 1 });
    if (!cursor) throw new Error('expected a cursor');
    const flipped = cursor.slice(0, 10) + (cursor[10] === 'A' ? 'B' : 'A') + cursor.slice(11);
    for (const bad of [
      flipped,
      cursor.slice(0, -1),
      `${cursor}x`,
      'garbage',
      '',
      '$$$',
      Buffer.from('{}').toString('base64url'),
    ]) {
      await expectInvalid(
        { cursor: bad },
        /^malformed cursor: pass next_cursor from the previous page unchanged, or omit cursor$/,
      );
    }
  });

  it('treats until as an inclusive upper bound, as a time or an event id', async () => {
    expect(await list({ until: times[2] })).toEqual(['gh-issues-closed', 'gh-issues-opened', 'gh-issues']);
    expect(await list({ until: '2024-05-01T12:00:02Z' })).toEqual(['gh-issues-opened', 'gh-issues']);
    expect(await list({ until: '2024-05-01T14:00:01.000001+02:00' })).toEqual(['gh-issues-opened', 'gh-issues']);
    expect(await list({ until: ids.get('gh-issues-opened') })).toEqual(['gh-issues-opened', 'gh-issues']);
    expect(await list({ until: ids.get('gh-issues') })).toEqual(['gh-issues']);
    expect(await list({ since: ids.get('gh-issues'), until: ids.get('gh-issue-comment') })).toEqual([
      'gh-issue-comment',
      'gh-issues-closed',
      'gh-issues-opened',
    ]);
    expect(await list({ until: '2024-05-01' })).toEqual([]);
    await expectInvalid({ until: '01900000-0000-7000-8000-000000000000' }, /^until: no event with id/);
    await expectInvalid({ until: 'tomorrow' }, /until must be an ISO-8601 time .* or an event id/);
  });

  it('lists oldest first on request, every filter applying alike', async () => {
    expect(await list({ order: 'oldest_first' })).toEqual([...newestFirst].reverse());
    expect(await list({ order: 'oldest_first', provider: 'github', eventType: 'issues' })).toEqual([
      'gh-issues',
      'gh-issues-opened',
      'gh-issues-closed',
    ]);
    expect(await list({ order: 'oldest_first', since: ids.get('st-pi') })).toEqual([
      'st-charge',
      'q-order',
      'open-ping',
    ]);
    expect(await list({ order: 'oldest_first', q: 'eur OR refund' })).toEqual(['st-pi', 'st-charge']);
    expect(await list({ order: 'oldest_first', limit: 2 })).toEqual(['gh-issues', 'gh-issues-opened']);
    await expectInvalid({ order: 'sideways' as never }, /order must be one of newest_first, oldest_first/);
  });

  it('pages oldest first by cursor, from a since event id (the catch-up of a listener)', async () => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ since: ids.get('gh-issues-opened'), order: 'oldest_first', limit: 3, cursor });
      pages.push(labels(page.events));
      cursor = page.next_cursor;
    } while (cursor !== undefined);
    expect(pages).toEqual([
      ['gh-issues-closed', 'gh-issue-comment', 'gh-issuesx'],
      ['gh-push', 'st-pi', 'st-charge'],
      ['q-order', 'open-ping'],
    ]);
  });

  it('binds next_cursor to its filters and order: other filters or the other order are refused, another page size is not', async () => {
    const page = await store.list({ provider: 'github', limit: 2 });
    const cursor = page.next_cursor ?? '';
    expect(cursor).not.toBe('');
    const foreign = /^the cursor belongs to another query/;
    await expectInvalid({ provider: 'stripe', limit: 2, cursor }, foreign);
    await expectInvalid({ limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', eventType: 'issues', limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', order: 'oldest_first', limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', verified: true, limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', since: times[0], limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', until: times[9], limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', q: 'opened', limit: 2, cursor }, foreign);
    await expectInvalid({ provider: 'github', match: { action: 'opened' }, limit: 2, cursor }, foreign);
    // The page size is not part of the query, and the default order is the order.
    expect(await list({ provider: 'github', limit: 1, cursor })).toEqual(['gh-issue-comment']);
    expect(await list({ provider: 'github', order: 'newest_first', limit: 10, cursor })).toEqual([
      'gh-issue-comment',
      'gh-issues-closed',
      'gh-issues-opened',
      'gh-issues',
    ]);
  });

  it('treats the same filters written differently as the same query for the cursor', async () => {
    const first = await store.list({ provider: 'github', since: '2024-05-01T12:00:00Z', limit: 1 });
    expect(
      await list({ provider: 'github', since: '2024-05-01T14:00:00+02:00', limit: 1, cursor: first.next_cursor }),
    ).toEqual(['gh-issuesx']);
    const byId = await store.list({ since: ids.get('gh-issues')?.toUpperCase(), limit: 1 });
    expect(await list({ since: ids.get('gh-issues'), limit: 1, cursor: byId.next_cursor })).toEqual(['q-order']);
    expect(resolveListQuery({ match: { a: 1, b: { c: [1, { d: 2, e: 3 }] } } }).fingerprint).toEqual(
      resolveListQuery({ match: { b: { c: [1, { e: 3, d: 2 }] }, a: 1 } }).fingerprint,
    );
    expect(resolveListQuery({ match: { a: [1, 2] } }).fingerprint).not.toEqual(
      resolveListQuery({ match: { a: [2, 1] } }).fingerprint,
    );
  });

  it('serves recent() as the newest page', async () => {
    expect((await store.recent(3)).map((e) => e.id)).toEqual((await store.list({ limit: 3 })).events.map((e) => e.id));
  });
});

// These add events of their own, so they run after the fixture-only tests above.
describe('list with more events', () => {
  it('breaks received_at ties by id, descending', async () => {
    const tied = await store.insertMany([
      newEvent({ provider: 'tie', eventType: 'tie' }),
      newEvent({ provider: 'tie', eventType: 'tie' }),
      newEvent({ provider: 'tie', eventType: 'tie' }),
    ]);
    await setReceivedAt(
      db.pool,
      tied.map((r) => r.event.id),
      '2024-04-01T11:00:00.000000Z',
    );
    const page = await store.list({ provider: 'tie' });
    expect(page.events.map((e) => e.id)).toEqual(
      tied
        .map((r) => r.event.id)
        .sort()
        .reverse(),
    );
    expect(new Set(page.events.map((e) => e.received_at))).toEqual(new Set(['2024-04-01T11:00:00.000000Z']));
  });

  it('keeps the default page at 50', async () => {
    const many = await store.insertMany(Array.from({ length: 60 }, () => newEvent({ provider: 'bulk' })));
    expect(many).toHaveLength(60);
    const page = await store.list({ provider: 'bulk' });
    expect(page.events).toHaveLength(50);
    expect(page.next_cursor).toBeDefined();
    const rest = await store.list({ provider: 'bulk', cursor: page.next_cursor });
    expect(rest.events).toHaveLength(10);
  });
});

// Paging with next_cursor while another writer keeps inserting.

const TYPES = ['issues.opened', 'issues.closed', 'push'] as const;
const FILTERS = {
  none: {},
  family: { eventType: 'issues' },
  exact: { eventType: 'push' },
} as const;

interface Scenario {
  count: number;
  distinctTimes: number;
  limit: number;
  filter: keyof typeof FILTERS;
  concurrentBatches: number;
  order: ListOrder;
}

/** Microsecond instants inside one millisecond: the ties JS Date could not even tell apart. */
const sharedTime = (group: number): string => `2024-06-01T08:00:00.123${String(400 + group).padStart(3, '0')}Z`;

function matches(eventType: string, filter: keyof typeof FILTERS): boolean {
  if (filter === 'family') return eventType.startsWith('issues.');
  if (filter === 'exact') return eventType === 'push';
  return true;
}

async function runScenario(scenario: Scenario): Promise<void> {
  const provider = `paging-${randomBytes(5).toString('hex')}`;
  const inserted = await store.insertMany(
    Array.from({ length: scenario.count }, (_, i) =>
      newEvent({ provider, eventType: TYPES[i % TYPES.length] ?? 'push' }),
    ),
  );
  for (let group = 0; group < scenario.distinctTimes; group += 1) {
    const members = inserted.filter((_, i) => i % scenario.distinctTimes === group).map((r) => r.event.id);
    await setReceivedAt(db.pool, members, sharedTime(group));
  }
  const expected = new Set(inserted.filter((r) => matches(r.event.event_type, scenario.filter)).map((r) => r.event.id));

  // Another writer keeps adding events to the same provider while we page: some land on the very
  // microseconds being paged through (ordered among the originals only by their random ids), the
  // rest arrive as new events.
  let paging = true;
  const writer = (async () => {
    for (let batch = 0; batch < scenario.concurrentBatches && paging; batch += 1) {
      const batchEvents = Array.from({ length: 5 }, (_, i) => ({
        provider,
        eventType: TYPES[(batch + i) % TYPES.length] ?? 'push',
      }));
      if (batch % 2 === 0) await insertAt(db.pool, batchEvents, sharedTime(batch % scenario.distinctTimes));
      else await store.insertMany(batchEvents.map((event) => newEvent(event)));
    }
  })();

  const seen: EventSummary[] = [];
  let cursor: string | undefined;
  for (let pages = 0; ; pages += 1) {
    expect(pages).toBeLessThan(10_000);
    const page = await store.list({
      provider,
      ...FILTERS[scenario.filter],
      order: scenario.order,
      limit: scenario.limit,
      cursor,
    });
    expect(page.events.length).toBeLessThanOrEqual(scenario.limit);
    if (page.next_cursor !== undefined) expect(page.events).toHaveLength(scenario.limit);
    seen.push(...page.events);
    if (page.next_cursor === undefined) break;
    cursor = page.next_cursor;
  }
  paging = false;
  await writer;

  const ids = seen.map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of expected) expect(ids).toContain(id);
  for (const event of seen) expect(matches(event.event_type, scenario.filter)).toBe(true);
  for (let i = 1; i < seen.length; i += 1) {
    const a = seen[i - 1];
    const b = seen[i];
    if (!a || !b) continue;
    const [earlier, later] = scenario.order === 'oldest_first' ? [a, b] : [b, a];
    const inOrder =
      later.received_at > earlier.received_at || (later.received_at === earlier.received_at && later.id > earlier.id);
    expect(inOrder).toBe(true);
  }
}

describe('paging with next_cursor', () => {
  it('returns every event exactly once, in either order: hundreds on one microsecond, others inserted concurrently (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          count: fc.integer({ min: 1, max: 250 }),
          distinctTimes: fc.integer({ min: 1, max: 4 }),
          limit: fc.integer({ min: 1, max: 60 }),
          filter: fc.constantFrom<keyof typeof FILTERS>('none', 'family', 'exact'),
          concurrentBatches: fc.integer({ min: 0, max: 20 }),
          order: fc.constantFrom<ListOrder>('newest_first', 'oldest_first'),
        }),
        runScenario,
      ),
      {
        numRuns: 6,
        examples: [
          [{ count: 400, distinctTimes: 1, limit: 7, filter: 'none', concurrentBatches: 20, order: 'newest_first' }],
          [{ count: 400, distinctTimes: 1, limit: 7, filter: 'none', concurrentBatches: 20, order: 'oldest_first' }],
          [{ count: 300, distinctTimes: 2, limit: 50, filter: 'family', concurrentBatches: 10, order: 'newest_first' }],
          [{ count: 300, distinctTimes: 2, limit: 50, filter: 'family', concurrentBatches: 10, order: 'oldest_first' }],
          [{ count: 200, distinctTimes: 1, limit: 200, filter: 'exact', concurrentBatches: 5, order: 'newest_first' }],
        ],
      },
    );
  });
});
