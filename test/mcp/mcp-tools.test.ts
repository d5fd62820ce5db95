import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_MANIFEST } from '../../generated/tool-manifest.ts';
import type { EventDetail, EventSummary, ListProvidersOutput, ListWebhookEventsOutput } from '../../generated/types.ts';
import {
  validateEventDetail,
  validateEventSummary,
  validateGetWebhookEventOutput,
  validateListProvidersOutput,
  validateListWebhookEventsOutput,
} from '../../generated/validators.js';
import { fillTemplate } from '../../src/errors/app-error.ts';
import { describeRate } from '../../src/mcp/switchboard-tools.ts';
import { snapshotTables } from './support/database-snapshot.ts';
import {
  GITHUB_SECRET,
  HOOK_TOKEN,
  STRIPE_SECRET,
  startMcpHarness,
  type Harness,
} from './support/switchboard-harness.ts';
import { callError, callOk } from './support/tool-calls.ts';
import { deliverGithub, deliverOpen, deliverStripe, deliverToken } from './support/webhooks.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { SUMMARY_FIELDS } from '../support/events.ts';

let h: Harness;
let client: Client;
/** Counts every TCP connection to the configured default replay target. */
let replayTarget: Consumer;
const ids: Record<string, string> = {};
const secretsSent: string[] = [];

beforeAll(async () => {
  replayTarget = await startConsumer();
  h = await startMcpHarness({ config: { replay: { default_target: replayTarget.url('/consumer') } } });
  client = await h.connect();

  const deliveries = {
    githubIssue: await deliverGithub(h.origin, JSON.stringify({ action: 'opened', issue: { number: 1 } }), {
      event: 'issues',
    }),
    githubPush: await deliverGithub(h.origin, '{"ref":"refs/heads/main"}', { event: 'push' }),
    githubForged: await deliverGithub(h.origin, '{"action":"closed"}', { event: 'issues', secret: 'not-the-secret' }),
    stripe: await deliverStripe(
      h.origin,
      JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', object: 'event' }),
    ),
    token: await deliverToken(h.origin, Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41, 0xc3, 0x28])),
    open: await deliverOpen(h.origin, '{\n  "type" :  "ping",\t"spaced":   [1 ,2]\n}\n'),
  };
  for (const [label, delivery] of Object.entries(deliveries)) {
    if (label !== 'githubForged') expect(delivery.status, label).toBe(200);
    secretsSent.push(...delivery.secrets);
  }
  // A forged delivery is refused (401) but recorded unverified; find its id through the store.
  const forged = (await h.store.list({ provider: 'github', eventType: 'issues' })).events.find((e) => !e.verified);
  for (const [label, delivery] of Object.entries(deliveries)) ids[label] = delivery.id;
  ids.githubForged = forged?.id ?? '';
  const queued = await h.store.insert({
    provider: 'jobs',
    eventType: 'job.done',
    trustMode: 'queue',
    verified: false,
    verifyDetail: 'no verification: queue provider',
    externalId: null,
    contentType: 'application/json',
    sourceIp: null,
    headers: {},
    payload: Buffer.from('{"job":7}'),
  });
  ids.queue = queued.event.id;
});

afterAll(async () => {
  await h?.close();
  await replayTarget?.close();
});

describe('tools/list', () => {
  it('Tool discovery lists the contract set: exactly four tools, each with title, description, annotations and both schemas from the manifest', async () => {
    const { tools } = await client.listTools();
    expect(client.getServerVersion()?.name).toBe('switchboard');
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_webhook_event',
      'list_providers',
      'list_webhook_events',
      'replay_webhook_event',
    ]);
    for (const tool of tools) {
      const entry = TOOL_MANIFEST.find((m) => m.name === tool.name);
      expect(entry).toBeDefined();
      expect(tool.title).toBe(entry?.title);
      expect(tool.description).toBe(
        fillTemplate(entry?.description ?? '', { replay_rate: describeRate(h.config.rateLimits.replay) }),
      );
      expect(tool.description).not.toContain('{replay_rate}');
      expect(tool.annotations).toEqual(entry?.annotations);
      expect(tool.inputSchema).toEqual(entry?.inputSchema);
      expect(tool.outputSchema).toEqual(entry?.outputSchema);
      if (tool.name === 'replay_webhook_event') {
        expect(tool.annotations?.openWorldHint).toBe(true);
        expect(tool.annotations?.readOnlyHint).toBeUndefined();
      } else {
        expect(tool.annotations?.readOnlyHint).toBe(true);
      }
    }
  });
});

describe('list_webhook_events', () => {
  it('Summary omits heavy fields: each event carries exactly the summary fields, the one-line summary included', async () => {
    const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events');
    expect(validateListWebhookEventsOutput(page)).toBe(true);
    expect(page.events.length).toBe(7);
    for (const event of page.events) {
      expect(Object.keys(event).sort()).toEqual(SUMMARY_FIELDS);
      expect(validateEventSummary(event)).toBe(true);
    }
  });

  it('orders newest first by received_at, then id', async () => {
    const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events');
    const keys = page.events.map((e) => `${e.received_at}|${e.id}`);
    expect(keys).toEqual([...keys].sort().reverse());
  });

  it('Filters narrow the list: provider, event_type (exact and dotless prefix) and since, alone and combined', async () => {
    const list = async (args: Record<string, unknown>): Promise<EventSummary[]> =>
      (await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', args)).events;

    const github = await list({ provider: 'github' });
    expect(new Set(github.map((e) => e.provider))).toEqual(new Set(['github']));
    expect(github.map((e) => e.id).sort()).toEqual([ids.githubIssue, ids.githubPush, ids.githubForged].sort());

    const issues = await list({ event_type: 'issues' });
    expect(issues.every((e) => e.event_type === 'issues' || e.event_type.startsWith('issues.'))).toBe(true);
    expect(issues.map((e) => e.id).sort()).toEqual([ids.githubIssue, ids.githubForged].sort());
    const exact = await list({ event_type: 'payment_intent.succeeded' });
    expect(exact.map((e) => e.id)).toEqual([ids.stripe]);

    const all = await list({});
    const oldestFirst = [...all].reverse();
    const pivot = oldestFirst[3];
    expect(pivot).toBeDefined();
    const sinceId = await list({ since: pivot?.id });
    expect(sinceId.map((e) => e.id)).toEqual(all.slice(0, all.length - 4).map((e) => e.id));
    const sinceTime = await list({ since: pivot?.received_at });
    expect(sinceTime.every((e) => e.received_at > (pivot?.received_at ?? ''))).toBe(true);
    expect(sinceTime.map((e) => e.id)).toEqual(sinceId.map((e) => e.id));

    const combined = await list({ provider: 'github', event_type: 'push', since: oldestFirst[0]?.id });
    expect(combined.map((e) => e.id)).toEqual([ids.githubPush]);
    expect(await list({ provider: 'linear' })).toEqual([]);
  });

  it('pages with next_cursor only when truncated', async () => {
    const first = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 3 });
    expect(first.events).toHaveLength(3);
    expect(typeof first.next_cursor).toBe('string');
    const whole = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 200 });
    expect(whole.next_cursor).toBeUndefined();
  });

  it('Limit is clamped: limit 0 and 201 are invalid_argument, 1 and 200 are answered', async () => {
    for (const limit of [0, 201, -1, 1.5, 10_000]) {
      const error = await callError(client, 'list_webhook_events', { limit });
      expect(error.code, `limit ${limit}`).toBe('invalid_argument');
      expect(error.message).toMatch(/limit/);
    }
    expect((await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 1 })).events).toHaveLength(1);
    expect(
      (await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 200 })).events.length,
    ).toBeGreaterThan(1);
  });

  it('Malformed cursor is rejected: tampered, truncated and non-cursors are invalid_argument, never internal', async () => {
    const first = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 2 });
    const cursor = first.next_cursor ?? '';
    expect(cursor).not.toBe('');
    const flip = (text: string, at: number): string =>
      text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const bad = [
      flip(cursor, Math.floor(cursor.length / 2)),
      flip(cursor, cursor.length - 1),
      cursor.slice(0, Math.floor(cursor.length / 2)),
      cursor.slice(1),
      'not-a-cursor',
      '!!!!',
      Buffer.from('{"t":"2024-01-01","id":"x"}').toString('base64url'),
      Buffer.from(JSON.stringify({ received_at: 'yesterday', id: 'nope' })).toString('base64'),
      'x'.repeat(512),
    ];
    for (const value of bad) {
      const error = await callError(client, 'list_webhook_events', { cursor: value });
      expect(error.code, value).toBe('invalid_argument');
      expect(error.message, value).toBe(
        'malformed cursor: pass next_cursor from the previous page unchanged, or omit cursor',
      );
    }
  });

  it('refuses unknown fields and wrong types as invalid_argument', async () => {
    expect((await callError(client, 'list_webhook_events', { providr: 'github' })).message).toMatch(
      /providr: unknown field/,
    );
    expect((await callError(client, 'list_webhook_events', { provider: 7 })).code).toBe('invalid_argument');
    expect((await callError(client, 'list_webhook_events', { since: 'last tuesday' })).code).toBe('invalid_argument');
    expect((await callError(client, 'list_providers', { verbose: true })).code).toBe('invalid_argument');
  });
});

describe('get_webhook_event', () => {
  it('returns the full sanitized detail, schema-valid, without signature values', async () => {
    const detail = await callOk<EventDetail>(client, 'get_webhook_event', { id: ids.githubIssue });
    expect(validateGetWebhookEventOutput(detail)).toBe(true);
    expect(detail).toMatchObject({
      id: ids.githubIssue,
      provider: 'github',
      event_type: 'issues.opened',
      trust_mode: 'signed',
      verified: true,
      content_type: 'application/json',
      source_ip: '127.0.0.1',
    });
    expect(detail.verify_detail).toMatch(/valid/);
    expect(detail.headers['x-github-event']).toBe('issues');
    expect(detail.payload).toEqual({
      encoding: 'utf8',
      data: JSON.stringify({ action: 'opened', issue: { number: 1 } }),
    });
    // Additive, optional fields: the one-line summary and the request it arrived in.
    expect(detail.summary).toBe('opened #1');
    expect(detail.request).toEqual({ method: 'POST', path: '/hooks/github', query: '', response_status: 200 });
    const text = JSON.stringify(detail);
    for (const secret of [...secretsSent, GITHUB_SECRET]) expect(text).not.toContain(secret);
  });

  it('Raw payload round-trips exactly: binary bytes as base64, JSON with arbitrary whitespace as identical utf8 text', async () => {
    const binary = await callOk<EventDetail>(client, 'get_webhook_event', { id: ids.token });
    expect(binary.payload.encoding).toBe('base64');
    expect(Buffer.from(binary.payload.data, 'base64')).toEqual(Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41, 0xc3, 0x28]));
    expect(binary.payload_size).toBe(7);

    const spaced = await callOk<EventDetail>(client, 'get_webhook_event', { id: ids.open });
    expect(spaced.payload.encoding).toBe('utf8');
    expect(Buffer.from(spaced.payload.data, 'utf8')).toEqual(
      Buffer.from('{\n  "type" :  "ping",\t"spaced":   [1 ,2]\n}\n'),
    );

    for (let i = 0; i < 5; i += 1) {
      const bytes = randomBytes(64 + i * 97);
      const delivered = await deliverToken(h.origin, bytes);
      const detail = await callOk<EventDetail>(client, 'get_webhook_event', { id: delivered.id });
      const decoded = Buffer.from(detail.payload.data, detail.payload.encoding === 'base64' ? 'base64' : 'utf8');
      expect(decoded.equals(bytes)).toBe(true);
    }
  });

  it('Unknown id raises not_found from get_webhook_event and replay_webhook_event', async () => {
    const unknown = uuidv7();
    expect(await callError(client, 'get_webhook_event', { id: unknown })).toMatchObject({ code: 'not_found' });
    expect(await callError(client, 'replay_webhook_event', { id: unknown })).toMatchObject({ code: 'not_found' });
    expect(replayTarget.connections).toBe(0);
    expect((await callError(client, 'get_webhook_event', { id: 'not-a-uuid' })).code).toBe('invalid_argument');
    expect((await callError(client, 'get_webhook_event', {})).code).toBe('invalid_argument');
  });
});

describe('trust disclosure', () => {
  it('Trust metadata always present: every event object has trust_mode and verified (detail: verify_detail); token, open and queue events are verified false', async () => {
    const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 200 });
    const resource = await client.readResource({ uri: 'switchboard://events/recent' });
    const [content] = resource.contents;
    const recent = JSON.parse(content !== undefined && 'text' in content ? content.text : '') as {
      events: EventSummary[];
    };
    const details = await Promise.all(
      page.events.map((e) => callOk<EventDetail>(client, 'get_webhook_event', { id: e.id })),
    );
    for (const event of [...page.events, ...recent.events, ...details]) {
      expect(event).toHaveProperty('trust_mode');
      expect(typeof event.verified).toBe('boolean');
      if (event.trust_mode !== 'signed') expect(event.verified, `${event.provider} ${event.trust_mode}`).toBe(false);
    }
    for (const detail of details) {
      expect(validateEventDetail(detail)).toBe(true);
      expect(detail.verify_detail.length).toBeGreaterThan(0);
    }
    const byId = new Map(details.map((d) => [d.id, d]));
    expect(byId.get(ids.githubIssue ?? '')).toMatchObject({ trust_mode: 'signed', verified: true });
    expect(byId.get(ids.githubForged ?? '')).toMatchObject({ trust_mode: 'signed', verified: false });
    expect(byId.get(ids.stripe ?? '')).toMatchObject({ trust_mode: 'signed', verified: true });
    expect(byId.get(ids.token ?? '')).toMatchObject({ trust_mode: 'token', verified: false });
    expect(byId.get(ids.open ?? '')).toMatchObject({ trust_mode: 'open', verified: false });
    expect(byId.get(ids.queue ?? '')).toMatchObject({ trust_mode: 'queue', verified: false });
  });
});

describe('list_providers', () => {
  it('Secret status without the secret: configured, missing and none-by-design, and no secret or token in the response', async () => {
    const result = await client.callTool({ name: 'list_providers', arguments: {} });
    const output = result.structuredContent as ListProvidersOutput;
    expect(validateListProvidersOutput(output)).toBe(true);
    const status = Object.fromEntries(output.providers.map((p) => [p.name, p.secret_status]));
    expect(status).toEqual({
      github: 'configured',
      stripe: 'configured',
      linear: 'missing',
      hook: 'configured',
      open: 'none-by-design',
      jobs: 'none-by-design',
    });
    expect(output.providers.find((p) => p.name === 'github')).toMatchObject({
      family: 'webhook',
      route: '/hooks/github',
      trust_mode: 'signed',
    });
    expect(output.providers.find((p) => p.name === 'jobs')).toMatchObject({
      family: 'queue',
      channel: 'jobs',
      trust_mode: 'queue',
    });
    const wire = JSON.stringify(result);
    for (const secret of [GITHUB_SECRET, STRIPE_SECRET, HOOK_TOKEN, h.token]) expect(wire).not.toContain(secret);
  });
});

describe('read-only tools', () => {
  it('A read tool never mutates state: list, get and list_providers write no row and make no outbound request', async () => {
    // Connecting authenticated already (last_used_at is written at most once a minute), so the
    // snapshot below starts after every write this client causes by merely being there.
    const before = await snapshotTables(h.db.pool);
    const connectionsBefore = replayTarget.connections;
    for (let i = 0; i < 3; i += 1) {
      const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 2 });
      await callOk(client, 'list_webhook_events', { cursor: page.next_cursor, limit: 3 });
      for (const id of Object.values(ids)) await callOk(client, 'get_webhook_event', { id });
      await callOk(client, 'list_providers');
      await callError(client, 'get_webhook_event', { id: uuidv7() });
    }
    const after = await snapshotTables(h.db.pool);
    expect(Object.keys(before)).toContain('events');
    expect(before.events?.length).toBeGreaterThan(0);
    expect(after).toEqual(before);
    expect(replayTarget.connections).toBe(connectionsBefore);
    expect(replayTarget.requests).toHaveLength(0);
  });
});
