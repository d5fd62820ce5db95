import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecentEventsResource } from '../../generated/types.ts';
import { validateRecentEventsResource } from '../../generated/validators.js';
import { newEvent } from '../support/events.ts';
import { snapshotTables } from './support/database-snapshot.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { deliverGithub, deliverOpen } from './support/webhooks.ts';

const URI = 'switchboard://events/recent';

let h: Harness;

beforeAll(async () => {
  h = await startMcpHarness();
});
afterAll(() => h?.close());

async function readRecent(client: Client): Promise<RecentEventsResource> {
  const result = await client.readResource({ uri: URI });
  expect(result.contents).toHaveLength(1);
  const [content] = result.contents;
  expect(content?.uri).toBe(URI);
  expect(content?.mimeType).toBe('application/json');
  const body: unknown = JSON.parse(content !== undefined && 'text' in content ? content.text : 'null');
  expect(validateRecentEventsResource(body), JSON.stringify(validateRecentEventsResource.errors)).toBe(true);
  return body as RecentEventsResource;
}

/** Collects resource-updated notifications with the time each arrived. */
function recordUpdates(client: Client): number[] {
  const arrivals: number[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    if (notification.params.uri === URI) arrivals.push(performance.now());
  });
  return arrivals;
}

/**
 * Proves the session's notification stream is open (the client opens its GET stream on its own,
 * in the background), then clears what was heard and lets the coalescing interval pass.
 */
async function untilListening(heard: number[]): Promise<void> {
  for (let attempt = 0; attempt < 20 && heard.length === 0; attempt += 1) {
    await h.store.insert(newEvent({ provider: 'open', eventType: 'probe' }));
    await waitFor(() => heard.length > 0, 500);
  }
  expect(heard.length).toBeGreaterThan(0);
  await new Promise((resolve) => setTimeout(resolve, 300));
  heard.length = 0;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('switchboard://events/recent', () => {
  it('is listed as an application/json resource and the server declares resource subscriptions', async () => {
    const client = await h.connect();
    const { resources } = await client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: URI, mimeType: 'application/json', name: 'recent-events' }),
    ]);
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
  });

  it('Resource returns summaries, never mutates: newest first, at most 50, and no row changes', async () => {
    const client = await h.connect();
    expect((await readRecent(client)).events).toEqual([]);
    await h.store.insertMany(
      Array.from({ length: 60 }, (_, i) => newEvent({ provider: 'open', eventType: `bulk.${i}` })),
    );
    const before = await snapshotTables(h.db.pool);
    const recent = await readRecent(client);
    await readRecent(client);
    expect(await snapshotTables(h.db.pool)).toEqual(before);
    expect(recent.events).toHaveLength(50);
    const keys = recent.events.map((e) => `${e.received_at}|${e.id}`);
    expect(keys).toEqual([...keys].sort().reverse());
    const newest = (await h.store.list({ limit: 50 })).events.map((e) => e.id);
    expect(recent.events.map((e) => e.id)).toEqual(newest);
    for (const event of recent.events) expect(Object.keys(event)).not.toContain('payload');
  });

  it('answers an unknown resource with a JSON-RPC error, not an empty read', async () => {
    const client = await h.connect();
    await expect(client.readResource({ uri: 'switchboard://events/all' })).rejects.toThrow(/-32002|not found/i);
    await expect(client.subscribeResource({ uri: 'file:///etc/passwd' })).rejects.toThrow(/-32002|not found/i);
  });

  it('Subscribers hear about new events: a real webhook delivery produces notifications/resources/updated within one second', async () => {
    const subscriber = await h.connect();
    const bystander = await h.connect();
    const heard = recordUpdates(subscriber);
    const notHeard = recordUpdates(bystander);
    await subscriber.subscribeResource({ uri: URI });
    await untilListening(heard);
    const sent = performance.now();
    const delivery = await deliverGithub(h.origin, '{"action":"opened"}', { event: 'issues' });
    expect(delivery.status).toBe(200);
    await waitFor(() => heard.length > 0, 1_000);
    expect(heard.length).toBeGreaterThan(0);
    expect((heard[0] ?? Infinity) - sent).toBeLessThan(1_000);
    const recent = await readRecent(subscriber);
    expect(recent.events[0]?.id).toBe(delivery.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(notHeard).toEqual([]);
  });

  it('coalesces a burst to at most one notification per 250 ms per session, the last change included', async () => {
    const client = await h.connect();
    const heard = recordUpdates(client);
    await client.subscribeResource({ uri: URI });
    await untilListening(heard);
    const started = performance.now();
    // Taken just before the last insert, which announces it: the server cannot hear of that event
    // any earlier.
    let lastPublished = started;
    for (let i = 0; i < 12; i += 1) {
      lastPublished = performance.now();
      await h.store.insert(newEvent({ provider: 'open', eventType: 'burst' }));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Latency is the subject of the test above; here only that the last change is heard at all.
    await waitFor(() => (heard.at(-1) ?? 0) > lastPublished, 3_000);
    // Each send is at least 250 ms after the previous one and after the first publish; an arrival is
    // never earlier than its send, so however late deliveries land, n sends need n − 1 intervals.
    expect(heard.length).toBeGreaterThanOrEqual(2);
    expect(heard.length).toBeLessThanOrEqual(Math.floor(((heard.at(-1) ?? 0) - started) / 250) + 1);
    expect(heard.at(-1) ?? 0).toBeGreaterThan(lastPublished);
  });

  it('stops notifying after resources/unsubscribe', async () => {
    const client = await h.connect();
    const heard = recordUpdates(client);
    await client.subscribeResource({ uri: URI });
    await untilListening(heard);
    await deliverOpen(h.origin, '{"type":"one"}');
    await waitFor(() => heard.length > 0, 1_000);
    expect(heard).toHaveLength(1);
    await client.unsubscribeResource({ uri: URI });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await deliverOpen(h.origin, '{"type":"two"}');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(heard).toHaveLength(1);
  });
});
