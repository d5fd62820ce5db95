import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { startControlledProxy } from '../support/tcp-proxy.ts';
import { killConnections, queueHarness, redisAvailable, uniqueKey, type QueueHarness } from './queue-harness.ts';

const available = await redisAvailable();

describe.runIf(available)('redis streams source', () => {
  let db: TestDatabase;
  let h: QueueHarness;
  const keys: string[] = [];

  beforeAll(async () => {
    db = await freshDatabase({ maximumPoolSize: 8 });
    h = await queueHarness(db);
  });

  afterAll(async () => {
    if (keys.length > 0) await h?.redis.del(...keys);
    await h?.close();
    await db?.close();
  });

  const streamKey = (label: string): string => {
    const key = uniqueKey(label);
    keys.push(key);
    return key;
  };

  const pendingCount = async (key: string, group = 'switchboard'): Promise<number> => {
    const summary = (await h.redis.xpending(key, group)) as [number, ...unknown[]];
    return Number(summary[0]);
  };

  /** Entries the group has not been given yet (Redis 7 XINFO GROUPS lag). */
  const groupLag = async (key: string): Promise<number> => {
    const groups = (await h.redis.xinfo('GROUPS', key)) as unknown[][];
    const fields = groups[0] ?? [];
    const at = fields.indexOf('lag');
    return Number(fields[at + 1]);
  };

  /** Stored events of a provider per external id, to check exactly-once. */
  const countsByExternalId = async (provider: string): Promise<Map<string, number>> => {
    const rows = await db.pool.any(
      sql.type(
        z.object({ external_id: z.string().nullable(), n: z.number() }),
      )`SELECT external_id, count(*)::int AS n FROM events WHERE provider = ${provider} GROUP BY external_id`,
    );
    return new Map(rows.map((r) => [String(r['external_id']), Number(r['n'])]));
  };

  /** A stream with its group made and `total` entries in it, before any consumer starts. */
  const filledStream = async (name: string, total: number): Promise<string> => {
    const key = streamKey(name);
    await h.redis.xgroup('CREATE', key, 'switchboard', '$', 'MKSTREAM');
    const pipeline = h.redis.pipeline();
    for (let i = 0; i < total; i += 1) pipeline.xadd(key, '*', 'payload', JSON.stringify({ i }));
    await pipeline.exec();
    return key;
  };

  /**
   * Restarts the consumer `consumer` after a stop: all `total` entries of `provider` end up stored
   * exactly once each, and none is left pending on `key`.
   */
  const restartStoresEachOnce = async (
    providers: Parameters<typeof h.start>[0],
    consumer: string,
    [provider, key, total]: [provider: string, key: string, total: number],
  ): Promise<void> => {
    const second = await h.start(providers, { consumer, streamBatchSize: 100 });
    await expect.poll(() => h.count(provider), { timeout: 20_000 }).toBe(total);
    const counts = await countsByExternalId(provider);
    expect(counts.size).toBe(total);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBe(0);
    await second.stop();
  };

  it('stores entries with the payload field as exact bytes, other fields as headers, and acknowledges them', async () => {
    const key = streamKey('orders');
    const sources = await h.start(
      { orders: { family: 'queue', channel: key, mode: 'streams', event_type_from: 'header:type' } },
      { consumer: 'test-basic' },
    );
    await expect.poll(() => sources.connectionOf('orders'), { timeout: 5_000 }).toBe('connected');
    // The group is created at "$": wait for it before producing.
    await expect.poll(async () => (await h.redis.exists(key)) === 1, { timeout: 5_000 }).toBe(true);

    const json = '{"order":1, "total": 9.5}';
    const binary = Buffer.from([0xde, 0xad, 0x00, 0xbe, 0xef]);
    const id1 = await h.redis.xadd(key, '*', 'type', 'order.created', 'payload', json);
    const id2 = await h.redis.xadd(key, '*', 'type', 'blob.stored', 'data', binary);
    const id3 = await h.redis.xadd(key, '*', 'user', 'ada', 'action', 'login');

    await expect.poll(async () => (await h.rows('orders')).length, { timeout: 5_000 }).toBe(3);
    const rows = await h.rows('orders');
    const byId = new Map(rows.map((r) => [r.externalId, r]));
    const first = byId.get(id1);
    expect(first).toMatchObject({
      trustMode: 'queue',
      verified: false,
      verifyDetail: `no verification: queue message (redis stream ${key}, group switchboard)`,
      eventType: 'order.created',
      contentType: 'application/json',
      headers: { 'x-redis-stream': key, 'x-redis-stream-id': id1, type: 'order.created' },
    });
    expect(first?.payload.toString()).toBe(json);
    expect(byId.get(id2)?.payload.equals(binary)).toBe(true);
    expect(byId.get(id2)).toMatchObject({ eventType: 'blob.stored', contentType: 'application/octet-stream' });
    // No payload or data field: the whole entry, as JSON; no type field: the stream key names it.
    expect(JSON.parse(byId.get(id3)?.payload.toString() ?? '')).toEqual({ user: 'ada', action: 'login' });
    expect(byId.get(id3)).toMatchObject({ eventType: key, contentType: 'application/json' });
    await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBe(0);
  });

  it('loses nothing when switchboard stops mid-stream and a new instance starts', async () => {
    const total = 1_500;
    const key = await filledStream('restart', total);

    const providers = { restart: { family: 'queue' as const, channel: key, mode: 'streams' as const } };
    const first = await h.start(providers, { consumer: 'restart-consumer', streamBatchSize: 10 });
    await expect.poll(async () => await h.count('restart'), { timeout: 10_000, interval: 5 }).toBeGreaterThan(50);
    // Stopped abruptly: whatever was read and not yet acknowledged stays pending.
    await first.stop();
    const storedAtStop = await h.count('restart');
    expect(storedAtStop).toBeLessThan(total);

    await restartStoresEachOnce(providers, 'restart-consumer', ['restart', key, total]);
  });

  it('loses nothing when stopped with entries pending because their commit failed', async () => {
    const total = 300;
    const key = await filledStream('pending-restart', total);

    const target = new URL(db.url);
    const proxy = await startControlledProxy(target.hostname, Number(target.port || 5432));
    const pool = await createDatabasePool(proxy.via(db.url), { connectionTimeoutMs: 500, maximumPoolSize: 2 });
    const providers = { pendrestart: { family: 'queue' as const, channel: key, mode: 'streams' as const } };
    // Entries left pending by a failed commit, as the source logs them: a pending count alone can
    // be a batch between its read and its acknowledgement, which the stop may still acknowledge.
    const leftPending: string[] = [];
    const logger = createLogger({
      level: 'error',
      destination: {
        write: (line: string) => {
          if (line.includes('stream entry not stored; left pending')) leftPending.push(line);
        },
      },
    });
    try {
      const first = await h.start(providers, {
        consumer: 'pending-consumer',
        streamBatchSize: 10,
        store: createEventStore(pool),
        logger,
      });
      await expect.poll(() => h.count('pendrestart'), { timeout: 10_000, interval: 5 }).toBeGreaterThan(20);
      await proxy.down();
      await expect.poll(() => leftPending.length, { timeout: 10_000 }).toBeGreaterThan(0);
      await first.stop();
      expect(await pendingCount(key)).toBeGreaterThan(0);
    } finally {
      await pool.end().catch(() => undefined);
      await proxy.close();
    }

    await restartStoresEachOnce(providers, 'pending-consumer', ['pendrestart', key, total]);
  });

  it('stores entries a crashed consumer had read but never acknowledged', async () => {
    const key = streamKey('crash');
    await h.redis.xgroup('CREATE', key, 'switchboard', '$', 'MKSTREAM');
    const ids = [
      await h.redis.xadd(key, '*', 'payload', '{"n":1}'),
      await h.redis.xadd(key, '*', 'payload', '{"n":2}'),
    ];
    // What a switchboard that died between read and commit leaves behind.
    await h.redis.xreadgroup('GROUP', 'switchboard', 'crash-consumer', 'COUNT', 10, 'STREAMS', key, '>');
    expect(await pendingCount(key)).toBe(2);

    await h.start({ crash: { family: 'queue', channel: key, mode: 'streams' } }, { consumer: 'crash-consumer' });
    await expect
      .poll(async () => (await h.rows('crash')).map((r) => r.externalId).sort(), { timeout: 5_000 })
      .toEqual([...ids].sort());
    await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBe(0);
  });

  it('takes over entries stranded under another consumer name once they are idle long enough', async () => {
    const key = streamKey('stranded');
    await h.redis.xgroup('CREATE', key, 'switchboard', '$', 'MKSTREAM');
    const id = await h.redis.xadd(key, '*', 'payload', '{"stranded":true}');
    await h.redis.xreadgroup('GROUP', 'switchboard', 'gone-host', 'COUNT', 10, 'STREAMS', key, '>');
    await new Promise((resolve) => setTimeout(resolve, 150));

    await h.start(
      { stranded: { family: 'queue', channel: key, mode: 'streams' } },
      { consumer: 'new-host', claimIdleMs: 100 },
    );
    await expect
      .poll(async () => (await h.rows('stranded')).map((r) => r.externalId), { timeout: 5_000 })
      .toEqual([id]);
    await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBe(0);
  });

  it('acknowledges nothing while the database is down, and stores everything once it returns', async () => {
    const key = streamKey('dbdown');
    const target = new URL(db.url);
    const proxy = await startControlledProxy(target.hostname, Number(target.port || 5432));
    const pool = await createDatabasePool(proxy.via(db.url), { connectionTimeoutMs: 500, maximumPoolSize: 2 });
    try {
      await h.redis.xgroup('CREATE', key, 'switchboard', '$', 'MKSTREAM');
      await proxy.down();
      const sources = await h.start(
        { dbdown: { family: 'queue', channel: key, mode: 'streams' } },
        { consumer: 'dbdown-consumer', store: createEventStore(pool) },
      );
      await expect.poll(() => sources.connectionOf('dbdown'), { timeout: 5_000 }).toBe('connected');
      for (let i = 0; i < 20; i += 1) await h.redis.xadd(key, '*', 'payload', JSON.stringify({ i }));
      await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // Every entry is either still pending (read, not acknowledged) or not yet delivered at all.
      expect((await pendingCount(key)) + (await groupLag(key))).toBe(20);
      expect(await h.rows('dbdown')).toHaveLength(0);

      await proxy.up();
      await expect.poll(async () => await h.count('dbdown'), { timeout: 20_000 }).toBe(20);
      await expect.poll(() => pendingCount(key), { timeout: 5_000 }).toBe(0);
      await sources.stop();
    } finally {
      await pool.end().catch(() => undefined);
      await proxy.close();
    }
  });

  it('re-reads its pending list after its Redis connection is killed and recreates a deleted stream', async () => {
    const key = streamKey('resilient');
    const sources = await h.start(
      { resilient: { family: 'queue', channel: key, mode: 'streams' } },
      { consumer: 'resilient-consumer', streamBlockMs: 200 },
    );
    await expect.poll(() => sources.connectionOf('resilient'), { timeout: 5_000 }).toBe('connected');
    await expect.poll(async () => (await h.redis.exists(key)) === 1, { timeout: 5_000 }).toBe(true);
    await h.redis.xadd(key, '*', 'payload', '{"before":"kill"}');
    await expect.poll(async () => (await h.rows('resilient')).length, { timeout: 5_000 }).toBe(1);

    expect(await killConnections(h.redis, 'switchboard:resilient')).toBe(1);
    await h.redis.xadd(key, '*', 'payload', '{"after":"kill"}');
    await expect.poll(async () => (await h.rows('resilient')).length, { timeout: 10_000 }).toBe(2);

    // Gone entirely (as after a Redis restart without persistence): the group is recreated.
    await h.redis.del(key);
    await expect.poll(async () => (await h.redis.exists(key)) === 1, { timeout: 10_000 }).toBe(true);
    await h.redis.xadd(key, '*', 'payload', '{"after":"delete"}');
    await expect.poll(async () => (await h.rows('resilient')).length, { timeout: 10_000 }).toBe(3);
  });
});
