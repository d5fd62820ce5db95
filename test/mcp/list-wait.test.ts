/**
 * list_webhook_events with wait_ms (issue 30): an agent that caused a webhook waits for it instead
 * of polling. Real deliveries into a real switchboard, the official SDK client, PostgreSQL's own
 * view of its connections.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorEnvelope, ListWebhookEventsOutput } from '../../generated/types.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { callError, callOk } from './support/tool-calls.ts';
import { deliverOpen, deliverStripe } from './support/webhooks.ts';

const WAITERS = 20;

let h: Harness;
let client: Client;

beforeAll(async () => {
  h = await startMcpHarness({ config: { mcp: { max_waits_per_caller: WAITERS } } });
  client = await h.connect();
  // Something to be newer than.
  expect((await deliverOpen(h.origin, '{"type":"seed"}')).status).toBe(200);
});
afterAll(() => h?.close());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function newestId(): Promise<string> {
  const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 1 });
  return page.events[0]?.id ?? '';
}

/** Calls list_webhook_events and says how long the answer took. */
async function timedList(
  caller: Client,
  args: Record<string, unknown>,
): Promise<{ page: ListWebhookEventsOutput; ms: number }> {
  const started = performance.now();
  const page = await callOk<ListWebhookEventsOutput>(caller, 'list_webhook_events', args);
  return { page, ms: performance.now() - started };
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Connections to the test database that are doing something: running a query or holding a transaction. */
async function busyConnections(databaseUrl: string): Promise<Array<{ state: string; query: string }>> {
  const probe = new pg.Client({ connectionString: databaseUrl });
  await probe.connect();
  try {
    const { rows } = await probe.query<{ state: string; query: string }>(
      `SELECT state, query FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'`,
    );
    return rows;
  } finally {
    await probe.end();
  }
}

describe('wait_ms', () => {
  it('Waiting returns when the next event commits: an event committed 300 ms into a 5 s wait returns in under 1 s, with since as the newest id', async () => {
    const since = await newestId();
    const waiting = timedList(client, { since, wait_ms: 5_000 });
    await sleep(300);
    const delivered = await deliverOpen(h.origin, '{"type":"next"}');
    const { page, ms } = await waiting;
    expect(page.events.map((e) => e.id)).toEqual([delivered.id]);
    expect(ms).toBeGreaterThanOrEqual(300);
    expect(ms).toBeLessThan(1_000);
  });

  it('returns the empty page after about wait_ms when nothing arrives, and at once without wait_ms', async () => {
    const since = await newestId();
    const { page, ms } = await timedList(client, { since, wait_ms: 800 });
    expect(page).toEqual({ events: [] });
    expect(ms).toBeGreaterThanOrEqual(790);
    expect(ms).toBeLessThan(2_500);
    const atOnce = await timedList(client, { since });
    expect(atOnce.page.events).toEqual([]);
    expect(atOnce.ms).toBeLessThan(500);
  });

  it('Filters apply to what wakes the wait: an event the filters exclude does not end it, the next matching one does', async () => {
    const since = await newestId();
    const waiting = timedList(client, { since, provider: 'stripe', wait_ms: 5_000 });
    await sleep(200);
    expect((await deliverOpen(h.origin, '{"type":"unrelated"}')).status).toBe(200);
    await sleep(400);
    const payment = await deliverStripe(h.origin, JSON.stringify({ id: 'evt_w', type: 'charge.succeeded' }));
    const { page, ms } = await waiting;
    expect(page.events.map((e) => e.id)).toEqual([payment.id]);
    expect(ms).toBeGreaterThanOrEqual(600);
  });

  it('Concurrent waits hold no database connection: 20 pending waits leave the pool free, and one commit answers them all', async () => {
    const since = await newestId();
    const clients = [client, await h.connect(), await h.connect(), await h.connect()];
    const waits = Array.from({ length: WAITERS }, (_, i) =>
      timedList(clients[i % clients.length] ?? client, { since, wait_ms: 15_000 }),
    );
    await until(() => h.surface.waitingCalls() === WAITERS, 5_000, 'every call waiting');
    // PostgreSQL's own view: no connection to this database is running a query or in a transaction.
    expect(await busyConnections(h.db.url)).toEqual([]);
    // The pool (10 connections) still serves other calls at once while 20 calls wait.
    const other = await timedList(client, { limit: 1 });
    expect(other.ms).toBeLessThan(1_000);
    expect(h.surface.waitingCalls()).toBe(WAITERS);

    const delivered = await deliverOpen(h.origin, '{"type":"for-everyone"}');
    const answers = await Promise.all(waits);
    for (const { page, ms } of answers) {
      expect(page.events.map((e) => e.id)).toEqual([delivered.id]);
      expect(ms).toBeLessThan(15_000);
    }
    expect(h.surface.waitingCalls()).toBe(0);
  });

  it('A revoked token ends its pending wait: answered unauthenticated within 5 s, before its session closes', async () => {
    const { token } = await h.tokens.create('waiting-agent');
    const doomed = await h.connect(token);
    const since = await newestId();
    const started = performance.now();
    const pending = callError(doomed, 'list_webhook_events', { since, wait_ms: 25_000 });
    await until(() => h.surface.waitingCalls() === 1, 5_000, 'the call waiting');
    const revokedAt = performance.now();
    await h.tokens.revoke('waiting-agent');
    const error = await pending;
    expect(error.code).toBe('unauthenticated');
    expect(error.message).toMatch(/revoked/);
    expect(performance.now() - revokedAt).toBeLessThan(5_000);
    expect(performance.now() - started).toBeLessThan(25_000);
    expect(h.surface.waitingCalls()).toBe(0);
  });

  it('Ending the session answers its pending wait: DELETE answers it with unavailable before the session closes', async () => {
    const leaving = await h.connect();
    const since = await newestId();
    const pending = callError(leaving, 'list_webhook_events', { since, wait_ms: 25_000 });
    await until(() => h.surface.waitingCalls() === 1, 5_000, 'the call waiting');
    const transport = leaving.transport;
    if (!(transport instanceof StreamableHTTPClientTransport)) throw new Error('not the HTTP transport');
    const sessions = h.surface.sessionCount();
    await transport.terminateSession();
    const error = await pending;
    expect(error.code).toBe('unavailable');
    expect(error.message).toMatch(/HTTP DELETE/);
    expect(h.surface.sessionCount()).toBe(sessions - 1);
  });

  it('a newest-first page past a cursor does not wait: older events cannot arrive later', async () => {
    for (let i = 0; i < 2; i += 1) await deliverOpen(h.origin, `{"type":"page-${i}"}`);
    const first = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 1 });
    expect(first.next_cursor).toBeDefined();
    const cursor = first.next_cursor ?? '';
    const { ms } = await timedList(client, { limit: 200, cursor, wait_ms: 5_000 });
    expect(ms).toBeLessThan(1_000);
  });
});

describe('wait_ms limits', () => {
  it('Waits are limited per caller: past mcp.max_waits_per_caller a wait is rate_limited, other tokens and calls that need no wait still go through', async () => {
    const limited = await startMcpHarness({ db: h.db, config: { mcp: { max_waits_per_caller: 2 } } });
    try {
      const first = await limited.connect();
      const second = await limited.connect();
      const since = (await callOk<ListWebhookEventsOutput>(first, 'list_webhook_events', { limit: 1 })).events[0]?.id;
      const waits = [first, second].map((c) =>
        callOk<ListWebhookEventsOutput>(c, 'list_webhook_events', { since, wait_ms: 20_000 }),
      );
      await until(() => limited.surface.waitingCalls() === 2, 5_000, 'two calls waiting');

      const refused: ErrorEnvelope['error'] = await callError(first, 'list_webhook_events', { since, wait_ms: 1_000 });
      expect(refused.code).toBe('rate_limited');
      expect(refused.retry_after).toBeGreaterThanOrEqual(1);
      expect(refused.message).toMatch(/2 list_webhook_events calls waiting \(mcp\.max_waits_per_caller\)/);
      // A call whose first read finds events never waits, so it is never refused.
      const found = await callOk<ListWebhookEventsOutput>(first, 'list_webhook_events', { limit: 1, wait_ms: 1_000 });
      expect(found.events).toHaveLength(1);
      // Another token has its own share.
      const { token } = await limited.tokens.create('other-waiter');
      const other = await limited.connect(token);
      const theirs = callOk<ListWebhookEventsOutput>(other, 'list_webhook_events', { since, wait_ms: 20_000 });
      await until(() => limited.surface.waitingCalls() === 3, 5_000, 'the other token waiting');

      const delivered = await deliverOpen(limited.origin, '{"type":"release"}');
      for (const page of await Promise.all([...waits, theirs]))
        expect(page.events.map((e) => e.id)).toEqual([delivered.id]);
    } finally {
      await limited.close();
    }
  });

  it('A wait costs one read however often it wakes: only the call itself takes a token from the read bucket', async () => {
    const metered = await startMcpHarness({
      db: h.db,
      config: { rate_limits: { read: { capacity: 3, refill_per_second: 0.01 } } },
    });
    try {
      // initialize took one read; the wait takes one, and wakes for each of five unrelated events.
      const agent = await metered.connect();
      const since = (await newestId()) || undefined;
      const waiting = callOk<ListWebhookEventsOutput>(agent, 'list_webhook_events', {
        since,
        provider: 'stripe',
        wait_ms: 1_500,
      });
      await until(() => metered.surface.waitingCalls() === 1, 5_000, 'the call waiting');
      for (let i = 0; i < 5; i += 1) await deliverOpen(metered.origin, `{"type":"noise-${i}"}`);
      expect((await waiting).events).toEqual([]);
      // One read left of the three, then the bucket is empty.
      await callOk(agent, 'list_providers');
      expect((await callError(agent, 'list_providers')).code).toBe('rate_limited');
    } finally {
      await metered.close();
    }
  });
});
