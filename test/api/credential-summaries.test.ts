/**
 * Issue 37.3: no one-line summary shows a credential-like field, on any surface that lists events:
 * the list the UI shows (GET /api/events, the same rows its live stream sends), one event over
 * /api, and MCP's list_webhook_events through the official SDK client. Real deliveries: an open
 * provider's payload full of credentials, and a Discord PING signed with an Ed25519 key that
 * Discord's own package accepts (its interaction token lives 15 minutes). A row stored before the
 * fix, with such a line, is shown without it too.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventList, EventDetail, ListWebhookEventsOutput } from '../../generated/types.ts';
import { discordCase, discordDelivery } from '../../catalog/discord/discord.case.ts';
import { STANDARD_PROVIDERS, startMcpHarness, type Harness } from '../mcp/support/switchboard-harness.ts';
import { callOk } from '../mcp/support/tool-calls.ts';
import { deliverOpen } from '../mcp/support/webhooks.ts';

const SECRETS = ['hunter2', 'sk_live_123', 'aW50ZXJhY3Rpb246MTE4NzI5', 's3cr3t-nested'];
const INTERACTION_TOKEN = 'aW50ZXJhY3Rpb246MTE4NzI5';

let h: Harness;
let client: Client;
const ids: Record<'open' | 'nested' | 'ping' | 'legacy', string> = { open: '', nested: '', ping: '', legacy: '' };

async function api<T>(path: string): Promise<T> {
  const res = await fetch(new URL(path, h.origin), { headers: { authorization: `Bearer ${h.token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

beforeAll(async () => {
  h = await startMcpHarness({
    config: { providers: { ...STANDARD_PROVIDERS, discord: { preset: 'discord', public_key: discordCase.secret } } },
  });
  client = await h.connect();
  const open = await deliverOpen(
    h.origin,
    JSON.stringify({ password: 'hunter2', api_key: 'sk_live_123', token: 'abc' }),
  );
  ids.open = open.id;
  const nested = await deliverOpen(
    h.origin,
    JSON.stringify({
      type: 'user.created',
      apiKey: 'sk_live_123',
      user: { name: 'ada', clientSecret: 's3cr3t-nested' },
    }),
  );
  ids.nested = nested.id;
  const ping = discordDelivery(discordCase.secret, Date.now(), {
    id: '1187301136418848798',
    application_id: '1187290427837456384',
    type: 1,
    token: INTERACTION_TOKEN,
    version: 1,
  });
  const answered = await fetch(new URL('/hooks/discord', h.origin), {
    method: 'POST',
    headers: ping.headers,
    body: new Uint8Array(ping.body),
  });
  expect(answered.status).toBe(200);
  const [pingEvent] = (await api<ApiEventList>('/api/events?provider=discord')).events;
  ids.ping = pingEvent?.id ?? '';
  // What a switchboard before the fix stored for the first delivery above.
  const legacy = await h.store.insert({
    provider: 'open',
    eventType: 'unknown',
    trustMode: 'open',
    verified: false,
    verifyDetail: 'open provider',
    externalId: randomUUID(),
    contentType: 'application/json',
    sourceIp: '127.0.0.1',
    headers: {},
    payload: Buffer.from('{}'),
    summary: 'password: hunter2 · api_key: sk_live_123 · token: abc',
  });
  ids.legacy = legacy.event.id;
});

afterAll(() => h?.close());

describe('summaries and credentials (issue 37.3)', () => {
  const expected = (): Record<string, string | undefined> => ({
    [ids.open]: undefined,
    [ids.nested]: 'user.name: ada',
    [ids.ping]: 'id: 1187301136418848798 · application_id: 1187290427837456384',
    [ids.legacy]: undefined,
  });

  it('the list the UI shows (GET /api/events) and one event over /api show no credential-like field', async () => {
    const list = await api<ApiEventList>('/api/events?limit=100');
    const lines = new Map(list.events.map((event) => [event.id, event.summary]));
    for (const [id, line] of Object.entries(expected())) expect(lines.get(id), id).toBe(line);
    for (const id of Object.values(ids)) {
      const detail = await api<EventDetail>(`/api/events/${id}`);
      expect(detail.summary, id).toBe(expected()[id]);
      expect(detail.external_id ?? '').not.toContain(INTERACTION_TOKEN);
    }
    const listed = JSON.stringify(list);
    for (const secret of SECRETS) expect(listed).not.toContain(secret);
    // The live stream sends the store's summaries of new ids, read through the same mapping.
    const streamed = await h.store.summaries(Object.values(ids));
    for (const event of streamed) expect(event.summary, event.id).toBe(expected()[event.id]);
  });

  it('MCP list_webhook_events (official SDK client) shows none either', async () => {
    const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 100 });
    const lines = new Map(page.events.map((event) => [event.id, event.summary]));
    for (const [id, line] of Object.entries(expected())) expect(lines.get(id) ?? undefined, id).toBe(line);
    const text = JSON.stringify(page);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
  });

  it("a Discord PING's summary leaves out its interaction token, which the stored payload still holds", async () => {
    const detail = await api<EventDetail>(`/api/events/${ids.ping}`);
    expect(detail.event_type).toBe('ping');
    expect(detail.summary).not.toContain(INTERACTION_TOKEN);
    expect(detail.payload.data).toContain(INTERACTION_TOKEN);
  });
});
