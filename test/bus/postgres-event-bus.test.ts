import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chunkIds, createPostgresEventBus, MAX_NOTIFY_PAYLOAD_BYTES, type PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
const open: PostgresEventBus[] = [];

function bus(channel?: string): PostgresEventBus {
  const created = createPostgresEventBus({ databaseUrl: db.url, logger: silentLogger, channel, reconnectMinMs: 50, reconnectMaxMs: 500 });
  open.push(created);
  return created;
}

function collect(target: PostgresEventBus): string[] {
  const heard: string[] = [];
  target.subscribe((ids) => heard.push(...ids));
  return heard;
}

beforeAll(async () => {
  db = await freshDatabase();
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});

afterAll(async () => {
  await db?.close();
});

describe('PostgreSQL event bus', () => {
  it('delivers ids published on one instance to another instance on the same database, and to itself', async () => {
    const a = bus();
    const b = bus();
    await Promise.all([a.ready(), b.ready()]);
    const heardByA = collect(a);
    const heardByB = collect(b);
    const ids = [randomUUID(), randomUUID()];
    await a.publish(ids);
    await expect.poll(() => heardByB, { timeout: 5_000 }).toEqual(ids);
    await expect.poll(() => heardByA, { timeout: 5_000 }).toEqual(ids);
  });

  it('splits large publishes under the NOTIFY payload limit and loses no id', async () => {
    const a = bus();
    const b = bus();
    await Promise.all([a.ready(), b.ready()]);
    const heard = collect(b);
    const ids = Array.from({ length: 1_000 }, () => randomUUID());
    await a.publish(ids);
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(1_000);
    expect(heard).toEqual(ids);
  });

  it('keeps channels apart', async () => {
    const a = bus('switchboard_events');
    const other = bus('other_channel');
    await Promise.all([a.ready(), other.ready()]);
    const heardByOther = collect(other);
    const heardByA = collect(a);
    await a.publish([randomUUID()]);
    await expect.poll(() => heardByA.length, { timeout: 5_000 }).toBe(1);
    expect(heardByOther).toEqual([]);
  });

  it('reconnects its LISTEN connection after the server drops it, and hears later events', async () => {
    const a = bus();
    const b = bus();
    await Promise.all([a.ready(), b.ready()]);
    const heard = collect(b);
    const terminated = await db.pool.anyFirst(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name = 'switchboard-event-bus' AND datname = current_database()
    `);
    expect(terminated.length).toBeGreaterThanOrEqual(2);
    await expect.poll(() => b.state, { timeout: 5_000 }).not.toBe('connected');
    await expect.poll(() => b.state, { timeout: 10_000 }).toBe('connected');
    await expect.poll(() => a.state, { timeout: 10_000 }).toBe('connected');
    const id = randomUUID();
    await a.publish([id]);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual([id]);
  });

  it('keeps delivering to other listeners when one throws, and stops after unsubscribe', async () => {
    const a = bus();
    await a.ready();
    a.subscribe(() => {
      throw new Error('listener bug');
    });
    const heard: string[] = [];
    const unsubscribe = a.subscribe((ids) => heard.push(...ids));
    const first = randomUUID();
    await a.publish([first]);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual([first]);
    unsubscribe();
    await a.publish([randomUUID()]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual([first]);
  });

  it('refuses to publish after close', async () => {
    const a = bus();
    await a.ready();
    await a.close();
    expect(a.state).toBe('disconnected');
    await expect(a.publish([randomUUID()])).rejects.toThrow(/closed/);
  });
});

describe('chunkIds', () => {
  it('packs ids into comma-joined payloads under the byte limit', () => {
    const ids = Array.from({ length: 1_000 }, () => randomUUID());
    const payloads = chunkIds(ids);
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_NOTIFY_PAYLOAD_BYTES);
    expect(payloads.join(',').split(',')).toEqual(ids);
  });

  it('handles the boundary exactly', () => {
    expect(chunkIds(['aaaa', 'bbbb', 'cccc'], 9)).toEqual(['aaaa,bbbb', 'cccc']);
    expect(chunkIds(['aaaa', 'bbbb'], 8)).toEqual(['aaaa', 'bbbb']);
    expect(chunkIds([], 9)).toEqual([]);
    expect(chunkIds(['', 'a,b', 'ok'], 9)).toEqual(['ok']);
  });
});
