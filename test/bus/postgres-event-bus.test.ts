import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  chunkIds,
  connectionFailure,
  createPostgresEventBus,
  MAX_NOTIFY_PAYLOAD_BYTES,
  type PostgresEventBus,
} from '../../src/bus/postgres-event-bus.ts';
import { createLogger } from '../../src/log/logger.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
const open: PostgresEventBus[] = [];

function bus(channel?: string, reconnectMinMs = 50): PostgresEventBus {
  const created = createPostgresEventBus({
    databaseUrl: db.url,
    logger: silentLogger,
    channel,
    reconnectMinMs,
    reconnectMaxMs: 2_000,
  });
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
    // A first retry after 0.5-1 s keeps the disconnected state visible long enough to observe;
    // with a 50 ms delay the bus can be back before a poll looks.
    const a = bus(undefined, 1_000);
    const b = bus(undefined, 1_000);
    await Promise.all([a.ready(), b.ready()]);
    const heard = collect(b);
    const terminated = await db.pool.anyFirst(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name = 'switchboard-event-bus' AND datname = current_database()
    `);
    expect(terminated.length).toBeGreaterThanOrEqual(2);
    await expect.poll(() => b.state, { timeout: 5_000, interval: 10 }).not.toBe('connected');
    await expect.poll(() => b.state, { timeout: 10_000 }).toBe('connected');
    await expect.poll(() => a.state, { timeout: 10_000 }).toBe('connected');
    const id = randomUUID();
    await a.publish([id]);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual([id]);
  });

  it('logs a lost connection (LISTEN and publish) as a short line: message and SQLSTATE, never the pg client', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'warn',
      destination: new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(
            ...chunk
              .toString('utf8')
              .split('\n')
              .filter((line) => line !== ''),
          );
          callback();
        },
      }),
    });
    const a = createPostgresEventBus({ databaseUrl: db.url, logger, reconnectMinMs: 50, reconnectMaxMs: 500 });
    open.push(a);
    await a.ready();
    // Leaves an idle connection in the publish pool, whose loss pg-pool reports with err.client set.
    await a.publish([randomUUID()]);
    await db.pool.query(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name LIKE 'switchboard-event-bus%' AND datname = current_database()
    `);
    const lost = (msg: string): Array<Record<string, unknown>> =>
      lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === msg);
    await expect
      .poll(() => lost('event bus LISTEN connection lost; reconnecting').length, { timeout: 5_000 })
      .toBeGreaterThan(0);
    await expect.poll(() => lost('event bus publish connection lost').length, { timeout: 5_000 }).toBeGreaterThan(0);
    for (const entry of [
      ...lost('event bus LISTEN connection lost; reconnecting'),
      ...lost('event bus publish connection lost'),
    ]) {
      expect(entry.reason).toEqual({ message: 'terminating connection due to administrator command', code: '57P01' });
      expect(entry).not.toHaveProperty('err');
    }
    for (const line of lines) {
      expect(line.length, line.slice(0, 200)).toBeLessThan(600);
      expect(line).not.toMatch(/connectionParameters|secretKey|processID|"client"/);
    }
    await expect.poll(() => a.state, { timeout: 10_000 }).toBe('connected');
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

describe('connectionFailure', () => {
  it('keeps the message and code, and nothing hung on the error', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
      client: { secretKey: 1 },
    });
    expect(connectionFailure(err)).toEqual({ message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED' });
    expect(connectionFailure(new Error('connection ended'))).toEqual({ message: 'connection ended' });
    expect(connectionFailure('gone')).toEqual({ message: 'gone' });
    expect(connectionFailure(new Error('x'.repeat(1_000))).message).toHaveLength(300);
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
