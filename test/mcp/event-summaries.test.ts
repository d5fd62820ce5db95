/**
 * The one-line summary on MCP's EventSummary (issue 30): the line the UI shows, in the list and
 * in the recent-events resource, cut where the EventSummary would pass 300 bytes, null when there is
 * none. Real deliveries
 * (GitHub and Stripe signed with their own libraries, Slack by its documented scheme), a real
 * queue message through Redis, the official SDK client.
 */
import { createHmac } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_SUMMARY_LIMITS } from '../../generated/constants.ts';
import type { EventSummary, ListWebhookEventsOutput, RecentEventsResource } from '../../generated/types.ts';
import { EVENT_SUMMARY_BUDGET_BYTES, MIN_SUMMARY_BYTES, toMcpEventSummary } from '../../src/mcp/event-summaries.ts';
import { startQueueSources, type QueueSources } from '../../src/queue/queue-sources.ts';
import { REDIS_URL, redisAvailable, uniqueKey } from '../queue/queue-harness.ts';
import { silentLogger } from '../support/database.ts';
import { STANDARD_PROVIDERS, startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { callOk } from './support/tool-calls.ts';
import { deliverGithub, deliverOpen, deliverStripe, deliverToken } from './support/webhooks.ts';

const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const QUEUE_CHANNEL = uniqueKey('mcp-summaries');

let h: Harness;
let client: Client;
let queue: QueueSources;
let redis: Redis;
const ids: Record<string, string> = {};

/** Signed by Slack's documented scheme (Slack publishes no signing library). */
async function deliverSlack(origin: string, payload: string): Promise<string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const digest = createHmac('sha256', SLACK_SECRET).update(`v0:${timestamp}:${payload}`).digest('hex');
  const response = await fetch(new URL('/hooks/slack', origin), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-slack-signature': `v0=${digest}`,
      'x-slack-request-timestamp': timestamp,
    },
    body: payload,
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

beforeAll(async () => {
  await redisAvailable();
  h = await startMcpHarness({
    config: {
      providers: {
        ...STANDARD_PROVIDERS,
        slack: { preset: 'slack', secret: SLACK_SECRET },
        jobs: { family: 'queue', channel: QUEUE_CHANNEL, event_type_from: '/kind' },
      },
    },
  });
  queue = startQueueSources({ providers: h.config.providers, store: h.store, logger: silentLogger });
  redis = new Redis(REDIS_URL);
  client = await h.connect();

  const push = async (message: string): Promise<string> => {
    const payload = { ref: 'refs/heads/main', repository: { full_name: 'acme/widgets' }, head_commit: { message } };
    return (await deliverGithub(h.origin, JSON.stringify(payload), { event: 'push' })).id;
  };
  ids.push = await push('Fix the login redirect\n\nIt looped on expired sessions.');
  ids.stripe = (
    await deliverStripe(
      h.origin,
      JSON.stringify({
        id: 'evt_1',
        type: 'payment_intent.succeeded',
        object: 'event',
        data: { object: { object: 'payment_intent', id: 'pi_3PqXYZ', amount: 2000, currency: 'usd' } },
      }),
    )
  ).id;
  ids.slack = await deliverSlack(
    h.origin,
    JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev123',
      event: { type: 'app_mention', channel: 'C123ABC456', user: 'U123ABC456', text: 'deploy please\nthanks' },
    }),
  );
  ids.open = (await deliverOpen(h.origin, JSON.stringify({ type: 'ping', zen: 'Keep it logically awesome.' }))).id;
  ids.none = (await deliverToken(h.origin, Buffer.from([0x00, 0xff, 0xfe]))).id;
  // The longest line the contract allows (120 characters), most of them three bytes long.
  ids.long = await push('修正'.repeat(80));
  // The queue message travels through Redis; wait_ms waits for its commit.
  const before = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 1 });
  await waitForSubscriber(QUEUE_CHANNEL);
  await redis.publish(QUEUE_CHANNEL, JSON.stringify({ kind: 'resize', image: 'cat.png', width: 640 }));
  const queued = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', {
    provider: 'jobs',
    since: before.events[0]?.id,
    wait_ms: 10_000,
  });
  ids.queue = queued.events[0]?.id ?? '';
  expect(ids.queue).not.toBe('');
});

afterAll(async () => {
  await queue?.stop();
  redis?.disconnect();
  await h?.close();
});

/** Pub/sub drops what is published before the source has subscribed. */
async function waitForSubscriber(channel: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const [, count] = (await redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
    if (count > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nobody subscribed to ${channel}`);
}

/** The line the UI shows for each event: the HTTP API's summary, from the store it reads. */
async function uiLines(): Promise<Map<string, string | undefined>> {
  const events = await h.store.summaries(Object.values(ids));
  return new Map(events.map((event) => [event.id, event.summary]));
}

async function listed(): Promise<Map<string, EventSummary>> {
  const page = await callOk<ListWebhookEventsOutput>(client, 'list_webhook_events', { limit: 200 });
  return new Map(page.events.map((event) => [event.id, event]));
}

async function fromResource(): Promise<Map<string, EventSummary>> {
  const result = await client.readResource({ uri: 'switchboard://events/recent' });
  const [content] = result.contents;
  const body = JSON.parse(content !== undefined && 'text' in content ? content.text : '{}') as RecentEventsResource;
  return new Map(body.events.map((event) => [event.id, event]));
}

describe('summary on EventSummary', () => {
  it('Summaries tell events apart in the list and the resource: GitHub push, Stripe, Slack, queue and open events carry the line the UI shows, null when there is none', async () => {
    const ui = await uiLines();
    for (const source of [await listed(), await fromResource()]) {
      const summaryOf = (label: string): string | null | undefined => source.get(ids[label] ?? '')?.summary;
      expect(summaryOf('push')).toBe('acme/widgets · main · Fix the login redirect');
      expect(summaryOf('stripe')).toBe('payment_intent · pi_3PqXYZ · 20.00 USD');
      for (const label of ['push', 'stripe', 'slack', 'queue', 'open']) {
        expect(summaryOf(label), label).toBe(ui.get(ids[label] ?? ''));
      }
      expect(summaryOf('slack')).toMatch(/^app_mention · in C123ABC456 · by U123ABC456 · deploy please$/);
      expect(summaryOf('queue')).toMatch(/image: cat\.png/);
      expect(summaryOf('open')).toBe('zen: Keep it logically awesome.');
      // Present, and null, when the payload gives nothing to show.
      expect(source.get(ids.none ?? '')).toHaveProperty('summary', null);
    }
  });

  it('cuts a long line where the EventSummary would pass 300 bytes, at a whole character, ending in …, a prefix of the UI line', async () => {
    const full = (await uiLines()).get(ids.long ?? '') ?? '';
    expect([...full].length).toBe(EVENT_SUMMARY_LIMITS.maxLength);
    for (const source of [await listed(), await fromResource()]) {
      const event = source.get(ids.long ?? '');
      const cut = event?.summary ?? '';
      expect(cut.endsWith('…')).toBe(true);
      expect(full.startsWith(cut.slice(0, -1))).toBe(true);
      const bytes = Buffer.byteLength(JSON.stringify(event));
      expect(bytes).toBeLessThanOrEqual(EVENT_SUMMARY_BUDGET_BYTES);
      // Cut only as far as it had to: one more three-byte character would not have fitted.
      expect(bytes).toBeGreaterThan(EVENT_SUMMARY_BUDGET_BYTES - 3);
    }
  });

  it('keeps any EventSummary within 300 bytes, whatever its line, cut at whole characters with escapes counted (property)', () => {
    const line = fc.string({ unit: 'binary', minLength: 1, maxLength: EVENT_SUMMARY_LIMITS.maxLength });
    const type = fc.string({ unit: 'grapheme-ascii', maxLength: 60 });
    fc.assert(
      fc.property(line, type, fc.nat(), (summary, eventType, size) => {
        const event = toMcpEventSummary({
          id: '0190c1e2-5a5b-7c3d-8e9f-a0b1c2d3e4f5',
          provider: 'github',
          event_type: eventType,
          trust_mode: 'signed',
          verified: true,
          payload_size: size,
          received_at: '2026-12-04T03:34:06.123456Z',
          summary,
        });
        const cut = event.summary ?? '';
        if (Buffer.byteLength(JSON.stringify(event)) > EVENT_SUMMARY_BUDGET_BYTES) return false;
        return cut === summary || (cut.endsWith('…') && summary.startsWith(cut.slice(0, -1)));
      }),
    );
    expect(toMcpEventSummary(SAMPLE).summary).toBeNull();
    // Fields that leave no room still leave the event 32 bytes of its line.
    const crowded = toMcpEventSummary({ ...SAMPLE, event_type: 'x'.repeat(200), summary: 'y'.repeat(120) });
    expect(crowded.summary).toBe(`${'y'.repeat(MIN_SUMMARY_BYTES - 3)}…`);
  });
});

const SAMPLE = {
  id: '0190c1e2-5a5b-7c3d-8e9f-a0b1c2d3e4f5',
  provider: 'github',
  event_type: 'push',
  trust_mode: 'signed',
  verified: true,
  payload_size: 10,
  received_at: '2026-12-04T03:34:06.123456Z',
} as const;
