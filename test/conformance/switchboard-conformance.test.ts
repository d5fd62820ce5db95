/**
 * switchboard's MCP contract, end to end: the Koa app with the real store on a fresh database,
 * on a real port, driven by the official SDK Client over HTTP. Every tool result and resource
 * read is checked against the generated validators, every event object for its trust fields, and
 * every byte the server sent for secrets and signature values.
 */
import { once } from 'node:events';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  ErrorEnvelope,
  EventDetail,
  EventSummary,
  ListProvidersOutput,
  ListWebhookEventsOutput,
} from '../../generated/types.ts';
import type { GeneratedValidator } from '../../generated/validators.js';
import {
  validateErrorEnvelope,
  validateEventDetail,
  validateEventSummary,
  validateGetWebhookEventOutput,
  validateListProvidersOutput,
  validateListWebhookEventsOutput,
  validateRecentEventsResource,
  validateReplayWebhookEventOutput,
} from '../../generated/validators.js';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { newEvent } from '../support/events.ts';
import {
  GITHUB_SECRET,
  HOOK_TOKEN,
  STRIPE_SECRET,
  startMcpHarness,
  type Harness,
} from '../mcp/support/switchboard-harness.ts';
import { deliverGithub, deliverOpen, deliverStripe, deliverToken } from '../mcp/support/webhooks.ts';

const OUTPUT_VALIDATORS: Record<string, GeneratedValidator<unknown>> = {
  list_webhook_events: validateListWebhookEventsOutput,
  get_webhook_event: validateGetWebhookEventOutput,
  replay_webhook_event: validateReplayWebhookEventOutput,
  list_providers: validateListProvidersOutput,
};

type Outcome<T> = { ok: true; value: T } | { ok: false; error: ErrorEnvelope['error'] };

let h: Harness;
let client: Client;
/** Every byte of every response the main client received. */
let wire = '';
/** Secrets configured and signature values sent: none may ever come back. */
const secrets = new Set<string>([GITHUB_SECRET, STRIPE_SECRET, HOOK_TOKEN]);
const seenCodes = new Set<string>();

/** Any object that looks like an event (id + provider + received_at) must say how far it can be trusted. */
function checkEventObjects(value: unknown, detail: boolean): void {
  if (Array.isArray(value)) {
    for (const item of value) checkEventObjects(item, detail);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const record = value as Record<string, unknown>;
  if ('provider' in record && 'received_at' in record) {
    expect(record.trust_mode, JSON.stringify(record)).toMatch(/^(signed|token|open|queue)$/);
    expect(typeof record.verified).toBe('boolean');
    if (record.trust_mode !== 'signed') expect(record.verified).toBe(false);
    if (detail) expect(typeof record.verify_detail).toBe('string');
    expect(detail ? validateEventDetail(record) : validateEventSummary(record)).toBe(true);
    return;
  }
  for (const nested of Object.values(record)) checkEventObjects(nested, detail);
}

/** Calls a tool through the official client and checks the answer against the contract, whatever it is. */
async function call<T>(target: Client, name: string, args: Record<string, unknown> = {}): Promise<Outcome<T>> {
  const result = await target.callTool({ name, arguments: args });
  const content = result.content as Array<{ type: string; text?: string }>;
  expect(content).toHaveLength(1);
  expect(content[0]?.type).toBe('text');
  const text = content[0]?.text ?? '';
  if (result.isError === true) {
    expect(result.structuredContent).toBeUndefined();
    const envelope: unknown = JSON.parse(text);
    expect(validateErrorEnvelope(envelope), text).toBe(true);
    const error = (envelope as ErrorEnvelope).error;
    seenCodes.add(error.code);
    expect(error.message).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE FROM|WHERE)\b|\n\s+at |\.ts:\d+/);
    return { ok: false, error };
  }
  const structured = result.structuredContent;
  const validate = OUTPUT_VALIDATORS[name];
  expect(validate?.(structured), JSON.stringify(validate?.errors)).toBe(true);
  expect(JSON.parse(text)).toEqual(structured);
  checkEventObjects(structured, name === 'get_webhook_event');
  return { ok: true, value: structured as T };
}

async function ok<T>(name: string, args: Record<string, unknown> = {}, target: Client = client): Promise<T> {
  const outcome = await call<T>(target, name, args);
  if (!outcome.ok) throw new Error(`${name} failed: ${JSON.stringify(outcome.error)}`);
  return outcome.value;
}

async function failure(
  name: string,
  args: Record<string, unknown> = {},
  target: Client = client,
): Promise<ErrorEnvelope['error']> {
  const outcome = await call(target, name, args);
  if (outcome.ok) throw new Error(`${name} unexpectedly succeeded`);
  return outcome.error;
}

async function readRecent(target: Client = client): Promise<{ events: EventSummary[] }> {
  const result = await target.readResource({ uri: 'switchboard://events/recent' });
  const [content] = result.contents;
  const body: unknown = JSON.parse(content !== undefined && 'text' in content ? content.text : 'null');
  expect(validateRecentEventsResource(body)).toBe(true);
  checkEventObjects(body, false);
  return body as { events: EventSummary[] };
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  h = await startMcpHarness();
  for (const delivery of [
    [
      'github',
      await deliverGithub(h.origin, JSON.stringify({ action: 'opened', issue: { number: 7, title: 'conformance' } }), {
        event: 'issues',
      }),
    ],
    ['githubPush', await deliverGithub(h.origin, JSON.stringify({ ref: 'refs/heads/main' }), { event: 'push' })],
    ['stripe', await deliverStripe(h.origin, JSON.stringify({ id: 'evt_9', type: 'invoice.paid', object: 'event' }))],
    ['token', await deliverToken(h.origin, '{"kind":"deploy"}', 'application/json')],
    ['open', await deliverOpen(h.origin, '{"type":"ping"}')],
  ] as const) {
    const [label, result] = delivery;
    expect(result.status, label).toBe(200);
    ids[label] = result.id;
    for (const secret of result.secrets) secrets.add(secret);
  }
  const queued = await h.store.insert(
    newEvent({ provider: 'jobs', eventType: 'job.done', trustMode: 'queue', verified: false, sourceIp: null }),
  );
  ids.queue = queued.event.id;
  client = await h.connect(undefined, { onResponseText: (text) => (wire += text) });
});

afterAll(async () => {
  await h?.close();
});

describe('MCP conformance: tools', () => {
  it('lists exactly the four contract tools under the server name switchboard', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(OUTPUT_VALIDATORS).sort());
    expect(client.getServerVersion()?.name).toBe('switchboard');
  });

  it('filters by provider, event type and since', async () => {
    const all = (await ok<ListWebhookEventsOutput>('list_webhook_events', { limit: 200 })).events;
    expect(all.map((e) => e.id).sort()).toEqual(Object.values(ids).sort());
    const github = (await ok<ListWebhookEventsOutput>('list_webhook_events', { provider: 'github' })).events;
    expect(github.map((e) => e.id).sort()).toEqual([ids.github, ids.githubPush].sort());
    const issues = (await ok<ListWebhookEventsOutput>('list_webhook_events', { event_type: 'issues' })).events;
    expect(issues.map((e) => e.id)).toEqual([ids.github]);
    const since = (await ok<ListWebhookEventsOutput>('list_webhook_events', { since: ids.stripe })).events;
    const newer = all.filter(
      (e) => `${e.received_at}|${e.id}` > `${all.find((x) => x.id === ids.stripe)?.received_at}|${ids.stripe}`,
    );
    expect(since.map((e) => e.id)).toEqual(newer.map((e) => e.id));
    const sinceTime = (
      await ok<ListWebhookEventsOutput>('list_webhook_events', { since: '2000-01-01T00:00:00Z', provider: 'stripe' })
    ).events;
    expect(sinceTime.map((e) => e.id)).toEqual([ids.stripe]);
  });

  it('Cursor round-trip has no duplicates or gaps while new events are ingested concurrently', async () => {
    await h.store.insertMany(
      Array.from({ length: 300 }, (_, i) => newEvent({ provider: 'open', eventType: `seed.${i % 7}` })),
    );
    const present = new Set((await h.store.list({ limit: 200 })).events.map((e) => e.id));
    let cursor: string | undefined;
    for (;;) {
      const page = await h.store.list({ limit: 200, ...(cursor === undefined ? {} : { cursor }) });
      for (const e of page.events) present.add(e.id);
      if (page.next_cursor === undefined) break;
      cursor = page.next_cursor;
    }
    expect(present.size).toBe(306);

    let inserting = true;
    let inserted = 0;
    const inserter = (async () => {
      while (inserting) {
        const results = await h.store.insertMany(
          Array.from({ length: 3 }, () => newEvent({ provider: 'open', eventType: 'concurrent' })),
        );
        inserted += results.length;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();

    const seen: string[] = [];
    let pages = 0;
    cursor = undefined;
    try {
      for (;;) {
        const page: ListWebhookEventsOutput = await ok<ListWebhookEventsOutput>('list_webhook_events', {
          limit: 7,
          ...(cursor === undefined ? {} : { cursor }),
        });
        pages += 1;
        seen.push(...page.events.map((e) => e.id));
        if (page.next_cursor === undefined) break;
        cursor = page.next_cursor;
      }
    } finally {
      inserting = false;
      await inserter;
    }
    expect(inserted).toBeGreaterThan(0);
    expect(pages).toBeGreaterThan(40);
    expect(new Set(seen).size).toBe(seen.length);
    const missing = [...present].filter((id) => !seen.includes(id));
    expect(missing).toEqual([]);
  });

  it('get returns the full sanitized detail: headers without signatures, exact payload, verification', async () => {
    const detail = await ok<EventDetail>('get_webhook_event', { id: ids.github });
    expect(detail).toMatchObject({
      provider: 'github',
      event_type: 'issues.opened',
      trust_mode: 'signed',
      verified: true,
    });
    expect(detail.verify_detail).toMatch(/valid/);
    expect(detail.payload).toEqual({
      encoding: 'utf8',
      data: JSON.stringify({ action: 'opened', issue: { number: 7, title: 'conformance' } }),
    });
    expect(detail.headers['x-github-event']).toBe('issues');
    expect(typeof detail.headers['x-github-delivery']).toBe('string');
    const stripeDetail = await ok<EventDetail>('get_webhook_event', { id: ids.stripe });
    expect(stripeDetail).toMatchObject({
      provider: 'stripe',
      trust_mode: 'signed',
      verified: true,
      external_id: 'evt_9',
    });
    const tokenDetail = await ok<EventDetail>('get_webhook_event', { id: ids.token });
    expect(tokenDetail).toMatchObject({ trust_mode: 'token', verified: false });
    for (const id of Object.values(ids)) await ok<EventDetail>('get_webhook_event', { id });
  });

  it('reports secret_status for every class: configured, missing and none-by-design', async () => {
    const { providers } = await ok<ListProvidersOutput>('list_providers');
    const byStatus = (status: string): string[] =>
      providers
        .filter((p) => p.secret_status === status)
        .map((p) => p.name)
        .sort();
    expect(byStatus('configured')).toEqual(['github', 'hook', 'stripe']);
    expect(byStatus('missing')).toEqual(['linear']);
    expect(byStatus('none-by-design')).toEqual(['jobs', 'open']);
  });

  it('reads the recent-events resource: newest first, validated, trust fields on every event', async () => {
    const recent = await readRecent();
    expect(recent.events.length).toBe(50);
    const newest = await ok<ListWebhookEventsOutput>('list_webhook_events', { limit: 50 });
    expect(recent.events.map((e) => e.id)).toEqual(newest.events.map((e) => e.id));
  });

  it('replays to a local consumer and reports its answer', async () => {
    const consumer = createNetServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n'));
    });
    consumer.listen(0, '127.0.0.1');
    await once(consumer, 'listening');
    try {
      const target = `http://127.0.0.1:${(consumer.address() as AddressInfo).port}/hook`;
      const result = await ok<{ delivered: boolean; response_status: number }>('replay_webhook_event', {
        id: ids.github,
        target_url: target,
      });
      expect(result).toMatchObject({ delivered: true, response_status: 202 });
    } finally {
      consumer.close();
    }
  });
});

describe('MCP conformance: errors', () => {
  it('Error results reach the official client intact: not_found, invalid_argument, replay_failed, rate_limited and internal', async () => {
    expect((await failure('get_webhook_event', { id: uuidv7() })).code).toBe('not_found');
    expect((await failure('replay_webhook_event', { id: uuidv7(), target_url: 'http://127.0.0.1:9/' })).code).toBe(
      'not_found',
    );
    expect((await failure('list_webhook_events', { limit: 0 })).code).toBe('invalid_argument');
    expect((await failure('list_webhook_events', { limit: 201 })).code).toBe('invalid_argument');
    expect((await failure('list_webhook_events', { cursor: 'garbage' })).code).toBe('invalid_argument');
    expect((await failure('list_webhook_events', { unknown: 1 })).code).toBe('invalid_argument');
    expect((await failure('replay_webhook_event', { id: ids.github, target_url: 'file:///etc/passwd' })).code).toBe(
      'invalid_argument',
    );

    const closed = createNetServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(
      (await failure('replay_webhook_event', { id: ids.github, target_url: `http://127.0.0.1:${closedPort}/` })).code,
    ).toBe('replay_failed');

    const limited = await startMcpHarness({
      db: h.db,
      config: { rate_limits: { read: { capacity: 3, refill_per_second: 0.01 } } },
    });
    try {
      const limitedClient = await limited.connect();
      let error: ErrorEnvelope['error'] | undefined;
      for (let i = 0; i < 5 && error === undefined; i += 1) {
        const outcome = await call(limitedClient, 'list_providers');
        if (!outcome.ok) error = outcome.error;
      }
      expect(error?.code).toBe('rate_limited');
      expect(error?.retry_after).toBeGreaterThanOrEqual(1);
      await expect(limitedClient.readResource({ uri: 'switchboard://events/recent' })).rejects.toThrow(/rate limit/);
    } finally {
      await limited.close();
    }

    // A store whose connections are gone: real PostgreSQL, real pool, ended.
    const deadPool = await createDatabasePool(h.db.url, { maximumPoolSize: 1 });
    await deadPool.end();
    const broken = await startMcpHarness({ db: h.db, store: createEventStore(deadPool) });
    try {
      const brokenClient = await broken.connect();
      for (const [name, args] of [
        ['list_webhook_events', {}],
        ['get_webhook_event', { id: ids.github }],
      ] as const) {
        const internal = await failure(name, args, brokenClient);
        expect(internal.code).toBe('internal');
        const reference = /reference ([0-9a-f-]{36})/.exec(internal.message)?.[1];
        expect(reference).toBeDefined();
        const logged = broken.logs.find((line) => line.correlationId === reference);
        expect(logged?.level).toBe(50);
      }
      await expect(brokenClient.readResource({ uri: 'switchboard://events/recent' })).rejects.toThrow(
        /internal error; reference/,
      );
    } finally {
      await broken.close();
    }

    expect([...seenCodes].sort()).toEqual([
      'internal',
      'invalid_argument',
      'not_found',
      'rate_limited',
      'replay_failed',
    ]);
  });

  it('never sends a configured secret or a signature value, in any response', async () => {
    // Runs last: by now the wire holds every answer of the suite's main client.
    expect(wire.length).toBeGreaterThan(10_000);
    expect(wire).toContain('list_webhook_events');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(wire.includes(secret), `secret ${secret.slice(0, 4)}… appeared`).toBe(false);
    }
    expect(wire).not.toContain(h.token);
  });
});
