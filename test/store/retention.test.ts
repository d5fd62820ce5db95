import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import {
  parseDuration,
  startRetention,
  type RetentionConfig,
  type RetentionJob,
} from '../../src/store/partitions/retention.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent, setReceivedAt } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;
const jobs: RetentionJob[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
});
afterAll(async () => {
  await Promise.all(jobs.map((job) => job.stop()));
  await db.close();
});
beforeEach(async () => {
  await db.pool.query(sql.unsafe`TRUNCATE events CASCADE`);
});

/** A job whose timer never fires during a test (first run an hour away): runOnce drives it. */
function job(config: Partial<RetentionConfig> = {}, batchSize = 7): RetentionJob {
  const started = startRetention({
    pool: db.pool,
    config: { interval_seconds: 3_600, ...config },
    logger: silentLogger,
    batchSize,
    initialDelayMs: 3_600_000,
  });
  jobs.push(started);
  return started;
}

async function remainingIds(): Promise<string[]> {
  return [
    ...(await db.pool.anyFirst(
      sql.type(z.object({ id: z.string() }))`SELECT id FROM events ORDER BY received_at DESC, id DESC`,
    )),
  ];
}

/** Inserts n events and spreads them one minute apart, ending `endMinutesAgo` before now. */
async function eventsMinutesApart(n: number, endMinutesAgo: number): Promise<string[]> {
  const results = await store.insertMany(Array.from({ length: n }, () => newEvent()));
  const ids = results.map((r) => r.event.id);
  for (const [i, id] of ids.entries()) {
    const minutesAgo = endMinutesAgo + (n - 1 - i);
    await db.pool.query(
      sql.unsafe`UPDATE events SET received_at = now() - make_interval(mins => ${minutesAgo}) WHERE id = ${id}`,
    );
  }
  return ids;
}

describe('retention', () => {
  it('parses durations', () => {
    expect(parseDuration('30d')).toBe(30 * 86_400_000);
    expect(parseDuration('12h')).toBe(43_200_000);
    expect(parseDuration('90m')).toBe(5_400_000);
    expect(parseDuration('45s')).toBe(45_000);
    expect(parseDuration('2w')).toBe(14 * 86_400_000);
    for (const bad of ['', '30', 'd', '0d', '-1d', '1.5d', '30 days', '1y']) {
      expect(() => parseDuration(bad)).toThrow(/retention.max_age/);
    }
  });

  it('deletes events older than max_age, in batches, and keeps the rest', async () => {
    const old = await eventsMinutesApart(40, 120); // 120 to 159 minutes ago
    const fresh = await eventsMinutesApart(5, 0); // 0 to 4 minutes ago
    const result = await job({ max_age: '60m' }).runOnce();
    expect(result).toEqual({ deletedByAge: 40, deletedByCount: 0 });
    expect(new Set(await remainingIds())).toEqual(new Set(fresh));
    expect(old).toHaveLength(40);
  });

  it('keeps only the newest max_events, breaking timestamp ties by id like the list does', async () => {
    const results = await store.insertMany(Array.from({ length: 30 }, () => newEvent()));
    const ids = results.map((r) => r.event.id);
    await setReceivedAt(db.pool, ids.slice(0, 20), '2024-01-01T00:00:00.000000Z');
    const keptByList = (await store.list({ limit: 12 })).events.map((e) => e.id);
    const result = await job({ max_events: 12 }).runOnce();
    expect(result).toEqual({ deletedByAge: 0, deletedByCount: 18 });
    expect(await remainingIds()).toEqual(keptByList);
    expect(await job({ max_events: 12 }).runOnce()).toEqual({ deletedByAge: 0, deletedByCount: 0 });
  });

  it('applies both limits in one run', async () => {
    await eventsMinutesApart(10, 120);
    const fresh = await eventsMinutesApart(10, 0);
    const result = await job({ max_age: '1h', max_events: 4 }).runOnce();
    expect(result).toEqual({ deletedByAge: 10, deletedByCount: 6 });
    expect(await remainingIds()).toEqual(fresh.slice(-4).reverse());
  });

  it('takes the replay history of deleted events with them', async () => {
    const [gone, kept] = await eventsMinutesApart(2, 0);
    if (!gone || !kept) throw new Error('setup');
    await db.pool.query(sql.unsafe`UPDATE events SET received_at = now() - interval '2 days' WHERE id = ${gone}`);
    const replays = createReplayAttemptRepository(db.pool);
    for (const eventId of [gone, kept]) {
      await replays.record({
        eventId,
        caller: 'ci',
        targetUrl: 'http://127.0.0.1:9/',
        resolvedIp: '127.0.0.1',
        delivered: true,
        responseStatus: 200,
        responseMs: 3.5,
        responseExcerpt: null,
        responseContentType: null,
        errorCode: null,
        unsigned: false,
      });
    }
    await job({ max_age: '1d' }).runOnce();
    expect(await replays.listForEvent(gone)).toEqual([]);
    expect(await replays.listForEvent(kept)).toHaveLength(1);
  });

  it('prunes on one instance at a time: a run skips while another instance holds the retention lock', async () => {
    await eventsMinutesApart(20, 120);
    // Another instance mid-run: it holds the lock on a connection of its own.
    const other = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      await other.connect(async (connection) => {
        await connection.query(sql.unsafe`SELECT pg_advisory_lock(hashtext('switchboard-retention'))`);
        expect(await job({ max_age: '60m' }).runOnce()).toEqual({ deletedByAge: 0, deletedByCount: 0, skipped: true });
        expect(await remainingIds()).toHaveLength(20);
        await connection.query(sql.unsafe`SELECT pg_advisory_unlock(hashtext('switchboard-retention'))`);
      });
      expect(await job({ max_age: '60m' }).runOnce()).toEqual({ deletedByAge: 20, deletedByCount: 0 });
    } finally {
      await other.end();
    }
  });

  it('takes over when the instance holding the lock dies: the lock goes with its connection', async () => {
    await eventsMinutesApart(9, 120);
    const other = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      const pid = await other.connect(async (connection) => {
        await connection.query(sql.unsafe`SELECT pg_advisory_lock(hashtext('switchboard-retention'))`);
        return connection.oneFirst(sql.type(z.object({ pid: z.number() }))`SELECT pg_backend_pid() AS pid`);
      });
      // Returned to its pool, the connection still holds the session lock: a run now skips.
      expect((await job({ max_age: '60m' }).runOnce()).skipped).toBe(true);
      await db.pool.query(sql.unsafe`SELECT pg_terminate_backend(${pid})`);
      await expect
        .poll(async () => job({ max_age: '60m' }).runOnce(), { timeout: 5_000 })
        .toEqual({
          deletedByAge: 9,
          deletedByCount: 0,
        });
    } finally {
      await other.end().catch(() => undefined);
    }
  });

  it('two instances pruning at once delete each event once between them', async () => {
    await eventsMinutesApart(60, 120);
    const other = await createDatabasePool(db.url, { maximumPoolSize: 2 });
    try {
      const second = startRetention({
        pool: other,
        config: { interval_seconds: 3_600, max_age: '60m' },
        logger: silentLogger,
        batchSize: 7,
        initialDelayMs: 3_600_000,
      });
      jobs.push(second);
      const results = await Promise.all([job({ max_age: '60m' }).runOnce(), second.runOnce()]);
      expect(results.reduce((sum, r) => sum + r.deletedByAge, 0)).toBe(60);
      expect(await remainingIds()).toEqual([]);
      await second.stop();
    } finally {
      await other.end();
    }
  });

  it('does nothing without limits, never overlaps runs, and runs on its timer', async () => {
    await eventsMinutesApart(3, 0);
    expect(await job().runOnce()).toEqual({ deletedByAge: 0, deletedByCount: 0 });
    expect(await job({ interval_seconds: 5 }).runOnce()).toEqual({ deletedByAge: 0, deletedByCount: 0 });

    const overlapping = job({ max_events: 1 });
    const [a, b] = await Promise.all([overlapping.runOnce(), overlapping.runOnce()]);
    expect(a).toBe(b);
    expect(a.deletedByCount).toBe(2);

    await eventsMinutesApart(3, 0);
    const timed = startRetention({
      pool: db.pool,
      config: { max_events: 1, interval_seconds: 0.05 },
      logger: silentLogger,
      initialDelayMs: 0,
    });
    jobs.push(timed);
    for (let i = 0; i < 50 && (await remainingIds()).length > 1; i += 1) await delay(20);
    expect(await remainingIds()).toHaveLength(1);
    await timed.stop();
  });

  it('rejects invalid configuration up front', () => {
    expect(() => job({ max_age: 'forever' })).toThrow(/max_age/);
    expect(() => job({ max_events: -1 })).toThrow(/max_events/);
    expect(() => job({ max_events: 10, interval_seconds: 0 })).toThrow(/interval_seconds/);
  });
});
