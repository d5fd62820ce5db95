import pg from 'pg';
import type { Interceptor, Query } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListWebhookEventsOutput } from '../../generated/types.ts';
import { indexQueuedEvents } from '../../src/store/events/search-indexer.ts';
import type { NewEvent } from '../../src/store/events/event-store.ts';
import { startApiTestServer, type ApiTestServer } from './api-test-server.ts';
import { getJson } from './http-helpers.ts';

/** Every query the store ran, so the test can EXPLAIN the exact SQL an API request produced. */
const captured: Query[] = [];
const capture: Interceptor = {
  name: 'test-capture',
  beforeQueryExecution: (_context, query) => {
    captured.push(query);
    return null;
  },
};

let server: ApiTestServer;
let explain: pg.Client;
// Enough rows, each carrying some bulk as real webhooks do, that the planner prefers the GIN
// indexes for selective searches (on a tiny table a sequential scan is rightly cheaper).
const TOTAL = 6000;
const BULK = 'lorem ipsum dolor sit amet '.repeat(24);

function event(i: number): NewEvent {
  const rare = i % 500 === 3;
  const payload = {
    action: ['opened', 'closed', 'edited'][i % 3],
    number: i,
    repository: { name: `repo-${i % 50}`, owner: { login: i % 7 === 0 ? 'octo' : 'someone' } },
    text: `${rare ? 'zanzibar ' : ''}lorem ipsum ${['alpha', 'bravo', 'charlie', 'delta'][i % 4]} dolor`,
    body: BULK,
  };
  return {
    provider: i % 2 === 0 ? 'github' : 'ci',
    eventType: i % 2 === 0 ? 'issues.opened' : 'build.finished',
    trustMode: i % 2 === 0 ? 'signed' : 'token',
    verified: i % 2 === 0 && i % 10 !== 0,
    verifyDetail: 'seeded',
    externalId: null,
    contentType: 'application/json',
    sourceIp: '127.0.0.1',
    headers: { 'content-type': 'application/json' },
    payload: Buffer.from(JSON.stringify(payload)),
  };
}

beforeAll(async () => {
  server = await startApiTestServer({ interceptors: [capture] });
  for (let i = 0; i < TOTAL; i += 500) {
    await server.store.insertMany(Array.from({ length: 500 }, (_, k) => event(i + k)));
  }
  // Indexed now, as the background indexer would have done by the time anyone searches.
  while ((await indexQueuedEvents(server.db.pool, 1000)) > 0);
  explain = new pg.Client({ connectionString: server.db.url });
  await explain.connect();
  // As autovacuum would have by then: fresh statistics (the queue is empty now) and the GIN
  // indexes' pending lists merged, so the planner costs the indexes as they will be.
  await explain.query('VACUUM ANALYZE events, event_search, event_search_queue');
});
afterAll(async () => {
  await explain?.end();
  await server?.close();
});

async function list(query: string): Promise<ListWebhookEventsOutput> {
  return getJson<ListWebhookEventsOutput>(server, `/api/events?${query}`);
}

async function allPages(query: string): Promise<ListWebhookEventsOutput['events']> {
  const events: ListWebhookEventsOutput['events'] = [];
  let cursor: string | undefined;
  do {
    const page = await list(`${query}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    events.push(...page.events);
    cursor = page.next_cursor;
  } while (cursor !== undefined);
  return events;
}

/**
 * The plan of the first list query run since captured held `since` queries: a search reads a group
 * of partitions per statement, newest first, and the first group holds this file's events.
 */
async function planOfFirstSince(marker: string, since: number): Promise<string> {
  const query = captured
    .slice(since)
    .find((q) => q.sql.includes(marker) && q.sql.includes('ORDER BY events.received_at DESC'));
  if (!query) throw new Error(`no captured query containing ${marker}`);
  const text = query.sql.replace(/\$slonik_(\d+)/g, '$$$1');
  const result = await explain.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, [...query.values] as unknown[]);
  return result.rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe('search on GET /api/events', () => {
  it('q searches the payload text', async () => {
    const hits = await allPages('q=zanzibar');
    expect(hits).toHaveLength(TOTAL / 500);
    const both = await allPages('q=zanzibar%20alpha');
    // i % 500 === 3 is odd, i % 4 === 3 → delta, never alpha.
    expect(both).toHaveLength(0);
    const phrase = await allPages(`q=${encodeURIComponent('"lorem ipsum"')}&provider=github`);
    expect(phrase).toHaveLength(TOTAL / 2);
  });

  it('match filters by JSON containment, nested objects included', async () => {
    const octo = await allPages(`match=${encodeURIComponent('{"repository":{"owner":{"login":"octo"}}}')}`);
    expect(octo).toHaveLength(Math.ceil(TOTAL / 7));
    const narrow = await allPages(`match=${encodeURIComponent('{"action":"opened","repository":{"name":"repo-3"}}')}`);
    for (const e of narrow) {
      const detail = await getJson<{ payload: { data: string } }>(server, `/api/events/${e.id}`);
      expect(JSON.parse(detail.payload.data)).toMatchObject({ action: 'opened', repository: { name: 'repo-3' } });
    }
    expect(narrow.length).toBeGreaterThan(0);
  });

  it('verified narrows to verified (or unverified) events', async () => {
    const verified = await allPages('verified=true');
    expect(verified.every((e) => e.verified)).toBe(true);
    expect(verified).toHaveLength(TOTAL / 2 - TOTAL / 10);
    const unverified = await allPages('verified=false&provider=github');
    expect(unverified.every((e) => !e.verified)).toBe(true);
    expect(unverified).toHaveLength(TOTAL / 10);
  });

  it('from and to bound received_at (from inclusive, to exclusive)', async () => {
    const newest = (await list('limit=200')).events;
    const a = newest[150];
    const b = newest[10];
    if (!a || !b) throw new Error('not enough events');
    const window = await allPages(`from=${encodeURIComponent(a.received_at)}&to=${encodeURIComponent(b.received_at)}`);
    expect(window.length).toBeGreaterThan(0);
    for (const e of window) {
      expect(e.received_at >= a.received_at).toBe(true);
      expect(e.received_at < b.received_at).toBe(true);
    }
    expect(window.map((e) => e.id)).toContain(a.id);
    expect(window.map((e) => e.id)).not.toContain(b.id);
    const future = await list(`from=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`);
    expect(future.events).toEqual([]);
  });

  it('combines search with the list filters and pages without duplicates', async () => {
    const combined = await allPages(`q=alpha&provider=github&match=${encodeURIComponent('{"action":"opened"}')}`);
    const ids = combined.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(combined.every((e) => e.provider === 'github')).toBe(true);
    expect(combined.length).toBeGreaterThan(0);
  });
});

describe('search uses the GIN indexes', () => {
  it("a selective q is a bitmap scan of event_search_tsv_idx (its partitions' copies)", async () => {
    const since = captured.length;
    await list('q=zanzibar');
    expect(await planOfFirstSince('payload_tsv @@', since)).toMatch(
      /Bitmap Index Scan on event_search_\w+_payload_tsv_idx/,
    );
  });

  it("a selective match is a bitmap scan of event_search_json_idx (its partitions' copies)", async () => {
    const since = captured.length;
    await list(`match=${encodeURIComponent('{"number":1234}')}`);
    expect(await planOfFirstSince('payload_json @>', since)).toMatch(
      /Bitmap Index Scan on event_search_\w+_payload_json_idx/,
    );
  });
});
