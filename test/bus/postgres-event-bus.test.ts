/**
 * The live bus listens; the store's insert announces (store/events/announcement.ts). So every test here
 * announces the real way, by storing events, and checks what the buses hear.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectionFailure, PostgresEventBus } from '../../src/bus/postgres-event-bus.ts';
import { createLogger } from '../../src/log/logger.ts';
import { ANNOUNCE_CHANNEL } from '../../src/store/events/announcement.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;
const open: PostgresEventBus[] = [];

function bus(reconnectMinMs = 50): PostgresEventBus {
  const created = new PostgresEventBus({
    databaseUrl: db.url,
    logger: silentLogger,
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

/** Stores `count` new events; answers their ids, each announced by its insert. */
async function stored(count = 1): Promise<string[]> {
  const results = await store.insertMany(Array.from({ length: count }, () => newEvent()));
  return results.map((result) => result.event.id);
}

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});

afterAll(async () => {
  await db?.close();
});

describe('PostgreSQL event bus', () => {
  it('tells every instance on the same database of the events an insert stored', async () => {
    const a = bus();
    const b = bus();
    await Promise.all([a.ready(), b.ready()]);
    const heardByA = collect(a);
    const heardByB = collect(b);
    const ids = await stored(2);
    await expect.poll(() => [...heardByB].sort(), { timeout: 5_000 }).toEqual([...ids].sort());
    await expect.poll(() => [...heardByA].sort(), { timeout: 5_000 }).toEqual([...ids].sort());
  });

  it('hears a large batch (several NOTIFY payloads) whole', async () => {
    const a = bus();
    await a.ready();
    const heard = collect(a);
    const ids = await stored(1_000);
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(1_000);
    expect([...heard].sort()).toEqual([...ids].sort());
  });

  it('hears only its channel, and only event ids in a payload', async () => {
    const a = bus();
    await a.ready();
    const heard = collect(a);
    const id = randomUUID();
    await db.pool.query(sql.unsafe`SELECT pg_notify('other_channel', ${randomUUID()})`);
    await db.pool.query(sql.unsafe`SELECT pg_notify(${ANNOUNCE_CHANNEL}, ${`not-an-id,${id},,x`})`);
    const [announced] = await stored(1);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual([id, announced]);
  });

  it('reconnects its LISTEN connection after the server drops it, and hears later events', async () => {
    // A first retry after 0.5-1 s keeps the disconnected state visible long enough to observe;
    // with a 50 ms delay the bus can be back before a poll looks.
    const a = bus(1_000);
    const b = bus(1_000);
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
    const ids = await stored(1);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual(ids);
  });

  it('logs a lost connection as a short line: message and SQLSTATE, never the pg client', async () => {
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
    const a = new PostgresEventBus({ databaseUrl: db.url, logger, reconnectMinMs: 50, reconnectMaxMs: 500 });
    open.push(a);
    await a.ready();
    await db.pool.query(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name = 'switchboard-event-bus' AND datname = current_database()
    `);
    const lost = (): Array<Record<string, unknown>> =>
      lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.msg === 'event bus LISTEN connection lost; reconnecting');
    await expect.poll(() => lost().length, { timeout: 5_000 }).toBeGreaterThan(0);
    for (const entry of lost()) {
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
    const first = await stored(1);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual(first);
    unsubscribe();
    await stored(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual(first);
  });

  it('hears nothing after close', async () => {
    const a = bus();
    await a.ready();
    const heard = collect(a);
    await a.close();
    expect(a.state).toBe('disconnected');
    await stored(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toEqual([]);
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
