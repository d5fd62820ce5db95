import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQueueSources } from '../../src/queue/queue-sources.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import {
  killConnections,
  queueHarness,
  queueProviders,
  redisAvailable,
  uniqueKey,
  type QueueHarness,
} from './queue-harness.ts';

const available = await redisAvailable();

describe.runIf(available)('redis pub/sub source', () => {
  let db: TestDatabase;
  let h: QueueHarness;

  beforeAll(async () => {
    db = await freshDatabase();
    h = await queueHarness(db);
  });

  afterAll(async () => {
    await h?.close();
    await db?.close();
  });

  async function subscribed(channel: string, pattern = false): Promise<void> {
    await expect
      .poll(
        async () => {
          if (pattern) return Number(await h.redis.pubsub('NUMPAT'));
          const reply = (await h.redis.pubsub('NUMSUB', channel)) as [string, number];
          return Number(reply[1]);
        },
        { timeout: 5_000 },
      )
      .toBeGreaterThan(0);
  }

  it('stores each published message as an unverified queue event with its exact bytes', async () => {
    const channel = uniqueKey('jobs');
    const sources = await h.start({ jobs: { family: 'queue', channel, event_type_from: '/kind' } });
    await subscribed(channel);
    expect(sources.connectionOf('jobs')).toBe('connected');
    const heard: string[] = [];
    h.bus.subscribe((ids) => heard.push(...ids));

    const json = Buffer.from('{"kind":"job.finished","id":42}');
    const binary = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x7b]);
    await h.redis.publish(channel, json);
    await h.redis.publish(channel, binary);

    await expect.poll(async () => (await h.rows('jobs')).length, { timeout: 5_000 }).toBe(2);
    const [first, second] = await h.rows('jobs');
    expect(first).toMatchObject({
      trustMode: 'queue',
      verified: false,
      verifyDetail: `no verification: queue message (redis pubsub ${channel})`,
      eventType: 'job.finished',
      externalId: null,
      contentType: 'application/json',
      sourceIp: null,
      headers: { 'x-redis-channel': channel },
      // The field that names the event is left out of its summary.
      summary: 'id: 42',
      request: null,
    });
    expect(first?.payload.equals(json)).toBe(true);
    // No /kind to read: the channel names the event.
    expect(second).toMatchObject({ eventType: channel, contentType: 'application/octet-stream', summary: null });
    expect(second?.payload.equals(binary)).toBe(true);
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);
  });

  it('subscribes to a pattern and names events by the channel they came on', async () => {
    const prefix = uniqueKey('pattern');
    const sources = await h.start({ fanin: { family: 'queue', channel: `${prefix}:*`, pattern: true } });
    await subscribed('', true);
    await expect.poll(() => sources.connectionOf('fanin'), { timeout: 5_000 }).toBe('connected');
    await h.redis.publish(`${prefix}:orders`, '"a JSON string"');
    await expect.poll(async () => (await h.rows('fanin')).length, { timeout: 5_000 }).toBe(1);
    const [row] = await h.rows('fanin');
    expect(row).toMatchObject({
      eventType: `${prefix}:orders`,
      contentType: 'application/json',
      verifyDetail: `no verification: queue message (redis psubscribe ${prefix}:* on ${prefix}:orders)`,
      headers: { 'x-redis-channel': `${prefix}:orders`, 'x-redis-pattern': `${prefix}:*` },
    });
  });

  it('reconnects and re-subscribes after its connection is killed, showing the state meanwhile', async () => {
    const channel = uniqueKey('flaky');
    const sources = await h.start({ flaky: { family: 'queue', channel } });
    await subscribed(channel);
    await expect.poll(() => sources.connectionOf('flaky'), { timeout: 5_000 }).toBe('connected');

    const states = new Set<string | undefined>();
    const watch = setInterval(() => states.add(sources.connectionOf('flaky')), 1);
    try {
      expect(await killConnections(h.redis, 'switchboard:flaky')).toBe(1);
      await expect.poll(() => states.has('disconnected') || states.has('connecting'), { timeout: 5_000 }).toBe(true);
      await expect.poll(() => sources.connectionOf('flaky'), { timeout: 10_000 }).toBe('connected');
    } finally {
      clearInterval(watch);
    }
    await subscribed(channel);
    await h.redis.publish(channel, '{"after":"reconnect"}');
    await expect.poll(async () => (await h.rows('flaky')).length, { timeout: 5_000 }).toBe(1);
  });

  it('reports an unreachable Redis as not connected, and stops cleanly', async () => {
    const sources = startQueueSources({
      providers: queueProviders({
        nowhere: { family: 'queue', channel: 'x' },
        off: { family: 'queue', channel: 'y', enabled: false },
      }),
      redisUrl: 'redis://127.0.0.1:1',
      store: createEventStore(db.pool),
      logger: silentLogger,
      backoff: { minMs: 20, maxMs: 100 },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(['connecting', 'disconnected']).toContain(sources.connectionOf('nowhere'));
    expect(sources.connectionOf('off')).toBeUndefined();
    expect(sources.connectionOf('unknown')).toBeUndefined();
    await sources.stop();
    expect(sources.connectionOf('nowhere')).toBe('disconnected');
  });
});
