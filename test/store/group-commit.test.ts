import type { Interceptor } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/errors/database-unavailable.ts';
import { createGroupCommitter } from '../../src/store/events/group-commit.ts';
import type { NewEvent } from '../../src/store/events/event-store.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';

let inserts = 0;
const countInserts: Interceptor = {
  name: 'count-inserts',
  beforeQueryExecution: (_context, query) => {
    if (query.sql.includes('INSERT INTO events')) inserts += 1;
    return null;
  },
};

let db: TestDatabase;
let store: PgEventStore;

beforeAll(async () => {
  db = await freshDatabase({ interceptors: [countInserts] });
  store = createEventStore(db.pool);
});

afterAll(async () => {
  await db?.close();
});

let n = 0;
function event(overrides: Partial<NewEvent> = {}): NewEvent {
  n += 1;
  return {
    provider: 'batch',
    eventType: 'test.event',
    trustMode: 'open',
    verified: false,
    verifyDetail: 'no verification: open provider',
    externalId: `ext-${n}-${Math.random()}`,
    contentType: 'application/json',
    sourceIp: '127.0.0.1',
    headers: {},
    payload: Buffer.from(JSON.stringify({ n })),
    ...overrides,
  };
}

describe('group commit', () => {
  it('puts events submitted together into one INSERT and resolves each with its own row', async () => {
    const committer = createGroupCommitter({ store, logger: silentLogger, maxConcurrentFlushes: 1 });
    const events = Array.from({ length: 40 }, () => event());
    const before = inserts;
    const results = await Promise.all(events.map((e) => committer.submit(e)));
    expect(inserts - before).toBe(1);
    for (const [i, result] of results.entries()) {
      const stored = await store.get(result.event.id);
      expect(stored?.externalId).toBe(events[i]?.externalId);
      expect(stored?.payload.equals(events[i]?.payload ?? Buffer.alloc(0))).toBe(true);
    }
  });

  it('collects what arrives during a flush into the next one', async () => {
    const committer = createGroupCommitter({ store, logger: silentLogger, maxConcurrentFlushes: 1 });
    const before = inserts;
    const first = committer.submit(event());
    // Submitted after the first flush has started: they must wait and go out together.
    await new Promise((resolve) => setImmediate(resolve));
    const later = Array.from({ length: 25 }, () => committer.submit(event()));
    await Promise.all([first, ...later]);
    expect(inserts - before).toBe(2);
  });

  it('caps a batch at maxBatch', async () => {
    const committer = createGroupCommitter({ store, logger: silentLogger, maxBatch: 10, maxConcurrentFlushes: 1 });
    const before = inserts;
    await Promise.all(Array.from({ length: 35 }, () => committer.submit(event())));
    expect(inserts - before).toBe(4);
  });

  it('isolates an unstorable event: its neighbours are stored, only it fails', async () => {
    const committer = createGroupCommitter({ store, logger: silentLogger });
    const good = Array.from({ length: 5 }, () => event());
    const bad = event({ provider: 'x'.repeat(65) });
    const outcomes = await Promise.allSettled(
      [...good.slice(0, 2), bad, ...good.slice(2)].map((e) => committer.submit(e)),
    );
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
  });

  it('drain waits for everything in flight', async () => {
    const committer = createGroupCommitter({ store, logger: silentLogger });
    let resolved = 0;
    for (let i = 0; i < 20; i += 1) void committer.submit(event()).then(() => (resolved += 1));
    await committer.drain();
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toBe(20);
  });
});

describe('isDatabaseUnavailable', () => {
  it('recognises connection failures through cause chains, and not statement errors', () => {
    expect(
      isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    expect(isDatabaseUnavailable(new Error('outer', { cause: Object.assign(new Error('x'), { code: '57P01' }) }))).toBe(
      true,
    );
    expect(isDatabaseUnavailable(Object.assign(new Error('x'), { code: '08006' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('value too long'), { code: '22001' }))).toBe(false);
    expect(isDatabaseUnavailable('string')).toBe(false);
  });
});
