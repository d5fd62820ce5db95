/**
 * list_webhook_events' filters beyond provider/event_type/since (issue 17): verified, q, match,
 * until and order, cursors bound to their query, and the errors that say what to do, all through
 * the official SDK client over HTTP.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventSummary, ListWebhookEventsOutput } from '../../generated/types.ts';
import { parseListQuery } from '../../src/api/list-parameters.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { callError, callOk } from './support/tool-calls.ts';
import { deliverGithub, deliverOpen, deliverToken } from './support/webhooks.ts';

let h: Harness;
let client: Client;
/** The fixture, oldest first. */
const ids: string[] = [];

const list = async (args: Record<string, unknown>): Promise<ListWebhookEventsOutput> =>
  callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', args);
const idsOf = (events: readonly EventSummary[]): string[] => events.map((e) => e.id);

beforeAll(async () => {
  h = await startMcpHarness();
  client = await h.connect();
  const deliveries = [
    () => deliverGithub(h.origin, '{"action":"opened","issue":{"number":1,"title":"zanzibar"}}', { event: 'issues' }),
    () => deliverGithub(h.origin, '{"action":"closed","issue":{"number":2}}', { event: 'issues' }),
    // A forgery: refused with 401 and recorded, signed but not verified.
    () => deliverGithub(h.origin, '{"action":"opened","issue":{"number":3}}', { event: 'issues', secret: 'wrong' }),
    () => deliverOpen(h.origin, '{"type":"ping","note":"zanzibar again"}'),
    () => deliverToken(h.origin, '{"build":{"status":"green"}}', 'application/json'),
    () => deliverGithub(h.origin, '{"ref":"refs/heads/main"}', { event: 'push' }),
  ];
  for (const deliver of deliveries) {
    const delivered = await deliver();
    ids.push(delivered.id);
  }
  // The forged delivery's answer (401) carries no id: find it as the unverified github event.
  const forged = (await h.store.list({ provider: 'github', verified: false })).events[0];
  ids[2] = forged?.id ?? '';
  expect(ids.every((id) => id !== '')).toBe(true);
});
afterAll(() => h?.close());

describe('list_webhook_events search filters', () => {
  it('Search filters match the HTTP API: verified, q and match give what GET /api/events gives for the same query', async () => {
    const pairs: Array<[query: string, args: Record<string, unknown>]> = [
      ['verified=true', { verified: true }],
      ['verified=false', { verified: false }],
      ['provider=github&verified=false', { provider: 'github', verified: false }],
      ['q=zanzibar', { q: 'zanzibar' }],
      ['q=%20zanzibar%20', { q: ' zanzibar ' }],
      ['q=zanzibar&order=oldest_first', { q: 'zanzibar', order: 'oldest_first' }],
      [`match=${encodeURIComponent('{"action":"opened"}')}`, { match: { action: 'opened' } }],
      [`match=${encodeURIComponent('{"issue":{"number":2}}')}`, { match: { issue: { number: 2 } } }],
      [
        `match=${encodeURIComponent('{"build":{"status":"green"}}')}&verified=false`,
        { match: { build: { status: 'green' } }, verified: false },
      ],
    ];
    for (const [query, args] of pairs) {
      const overHttp = await h.store.list(parseListQuery(Object.fromEntries(new URLSearchParams(query))));
      const overMcp = await list(args);
      expect(idsOf(overMcp.events), query).toEqual(idsOf(overHttp.events));
    }
    // The semantics, spelled out: only the signature that checked out is verified.
    expect(idsOf((await list({ verified: true })).events)).toEqual([ids[5], ids[1], ids[0]]);
    expect(idsOf((await list({ provider: 'github', verified: false })).events)).toEqual([ids[2]]);
    expect(idsOf((await list({ q: 'zanzibar' })).events)).toEqual([ids[3], ids[0]]);
    expect(idsOf((await list({ match: { action: 'opened' } })).events)).toEqual([ids[2], ids[0]]);
  });

  it('refuses what GET /api/events refuses: a match that is not an object or too long, a blank or too long q', async () => {
    for (const match of ['{"action":"opened"}', ['x'], 7]) {
      const error = await callError(client, 'list_webhook_events', { match });
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toMatch(/match: must be object/);
    }
    const tooLong = await callError(client, 'list_webhook_events', { match: { note: 'x'.repeat(2000) } });
    expect(tooLong).toMatchObject({
      code: 'invalid_argument',
      message: 'match must be at most 2000 characters as JSON',
    });
    expect(await callError(client, 'list_webhook_events', { q: '   ' })).toMatchObject({
      code: 'invalid_argument',
      message: 'q must not be blank',
    });
    expect((await callError(client, 'list_webhook_events', { q: 'x'.repeat(201) })).message).toMatch(
      /^arguments\.q|q: /,
    );
    expect((await callError(client, 'list_webhook_events', { verified: 'true' })).message).toMatch(
      /verified: must be boolean/,
    );
  });
});

describe('until and order', () => {
  it('Until bounds the list inclusively: an ISO time or an event id, the event itself included', async () => {
    expect(idsOf((await list({ until: ids[2] })).events)).toEqual([ids[2], ids[1], ids[0]]);
    const third = await callOk<{ received_at: string }>(client, 'get_webhook_event', { id: ids[2] });
    expect(idsOf((await list({ until: third.received_at })).events)).toEqual([ids[2], ids[1], ids[0]]);
    expect(idsOf((await list({ since: ids[0], until: ids[3], order: 'oldest_first' })).events)).toEqual(
      ids.slice(1, 4),
    );
    expect((await list({ until: '2000-01-01T00:00:00Z' })).events).toEqual([]);
  });

  it('Oldest-first order pages forward with the cursor: every event once, oldest first, also after a since event id', async () => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await list({ order: 'oldest_first', limit: 4, ...(cursor ? { cursor } : {}) });
      pages.push(idsOf(page.events));
      cursor = page.next_cursor;
    } while (cursor !== undefined);
    expect(pages).toEqual([ids.slice(0, 4), ids.slice(4)]);

    const after: string[] = [];
    cursor = undefined;
    do {
      const page = await list({ since: ids[1], order: 'oldest_first', limit: 2, ...(cursor ? { cursor } : {}) });
      after.push(...idsOf(page.events));
      cursor = page.next_cursor;
    } while (cursor !== undefined);
    expect(after).toEqual(ids.slice(2));

    // Newest first is still the default, and its cursor pages backwards in time.
    const newest = await list({ limit: 4 });
    expect(idsOf(newest.events)).toEqual([...ids].reverse().slice(0, 4));
    const rest = await list({ limit: 4, cursor: newest.next_cursor });
    expect(idsOf(rest.events)).toEqual([ids[1], ids[0]]);
  });
});

describe('errors that say what to do', () => {
  it('Unknown provider is not_found naming the configured providers', async () => {
    const error = await callError(client, 'list_webhook_events', { provider: 'gitlab' });
    expect(error).toEqual({
      code: 'not_found',
      message: 'no provider named "gitlab"; configured providers: github, stripe, linear, hook, open, jobs',
    });
    // Names only: nothing else about the providers (routes, secrets) is in the message.
    expect(error.message).not.toMatch(/hooks\/|secret|token/);
    // A configured provider with nothing stored is an empty page.
    expect((await list({ provider: 'stripe' })).events).toEqual([]);
  });

  it('Cursor from another query is rejected: other filters or the other order are invalid_argument saying so', async () => {
    const first = await list({ provider: 'github', limit: 1 });
    const cursor = first.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    for (const other of [
      { provider: 'open' },
      {},
      { provider: 'github', order: 'oldest_first' },
      { provider: 'github', verified: true },
      { provider: 'github', event_type: 'issues' },
      { provider: 'github', match: { action: 'opened' } },
      { provider: 'github', until: ids[5] },
    ]) {
      const error = await callError(client, 'list_webhook_events', { ...other, cursor });
      expect(error.code, JSON.stringify(other)).toBe('invalid_argument');
      expect(error.message).toMatch(/^the cursor belongs to another query/);
      expect(error.message).toMatch(/omit cursor/);
    }
    // The same filters and order continue, whatever the page size.
    expect(idsOf((await list({ provider: 'github', limit: 2, cursor })).events)).toEqual([ids[2], ids[1]]);
  });

  it('Bad since or until names both accepted forms: an ISO time or an event id', async () => {
    for (const field of ['since', 'until']) {
      const error = await callError(client, 'list_webhook_events', { [field]: 'last tuesday' });
      expect(error).toEqual({
        code: 'invalid_argument',
        message: `${field} must be an ISO-8601 time such as 2024-05-01T12:00:00Z, or an event id (a UUID from list_webhook_events)`,
      });
      const unknown = await callError(client, 'list_webhook_events', {
        [field]: '01900000-0000-7000-8000-000000000000',
      });
      expect(unknown).toEqual({
        code: 'invalid_argument',
        message: `${field}: no event with id 01900000-0000-7000-8000-000000000000`,
      });
    }
    expect((await callError(client, 'list_webhook_events', { order: 'sideways' })).message).toMatch(
      /order: must be one of "newest_first", "oldest_first"/,
    );
  });
});
