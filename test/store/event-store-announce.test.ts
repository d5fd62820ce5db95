/**
 * insertMany announces: the live bus's NOTIFY travels inside the insert's own statement
 * (store/events/announcement.ts, docs/adr/ingest-performance.md), so every newly stored event is
 * announced exactly once, a duplicate never, and nothing before the rows are visible.
 */
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOUNCE_CHANNEL, announcedIds, IDS_PER_NOTIFY } from '../../src/store/events/announcement.ts';
import { createGroupCommitter } from '../../src/store/events/group-commit.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_NOTIFY_PAYLOAD_BYTES = 7999;

const CHANNEL = ANNOUNCE_CHANNEL;

let db: TestDatabase;
let store: PgEventStore;
let listener: pg.Client;
const payloads: string[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (message) => {
    if (message.channel === CHANNEL) payloads.push(message.payload ?? '');
  });
  await listener.query(`LISTEN ${CHANNEL}`);
});
afterAll(async () => {
  await listener.end();
  await db.close();
});

/** Waits until the notifications heard name `count` ids (or 10 s pass), then answers them. */
async function heardIds(count: number): Promise<string[]> {
  const ids = (): string[] => payloads.flatMap((p) => p.split(','));
  for (let waited = 0; ids().length < count && waited < 10_000; waited += 20) await delay(20);
  // A little longer: an extra (duplicate) announcement would arrive now.
  await delay(200);
  return ids();
}

describe('insertMany announces what it stores', () => {
  it('announces each newly stored event exactly once, in payloads under the NOTIFY limit, and no duplicate', async () => {
    payloads.length = 0;
    const [stored] = await store.insertMany([newEvent({ externalId: 'already-stored' })]);
    await heardIds(1);
    payloads.length = 0;

    // 450 new events (three NOTIFY payloads), a retry of a stored delivery and a retry inside the batch.
    const events = [
      ...Array.from({ length: 450 }, (_, i) => newEvent({ externalId: `announce-${i}` })),
      newEvent({ externalId: 'already-stored' }),
      newEvent({ externalId: 'announce-7' }),
    ];
    const results = await store.insertMany(events);
    const fresh = results.filter((r) => !r.duplicate).map((r) => r.event.id);
    expect(fresh).toHaveLength(450);
    expect(results.at(-2)?.event.id).toBe(stored?.event.id);

    const heard = await heardIds(450);
    expect([...heard].sort()).toEqual([...fresh].sort());
    expect(payloads.length).toBeGreaterThanOrEqual(3);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_NOTIFY_PAYLOAD_BYTES);
  });

  it('announces only after the rows are visible to another session', async () => {
    payloads.length = 0;
    const seen: boolean[] = [];
    const checker = new pg.Client({ connectionString: db.url });
    await checker.connect();
    // One query at a time on the checker's connection, in the order the notifications came.
    let checking = Promise.resolve();
    const onNotification = (message: pg.Notification): void => {
      if (message.channel !== CHANNEL) return;
      const ids = (message.payload ?? '').split(',');
      checking = checking.then(async () => {
        const { rows } = await checker.query<{ n: string }>(
          'SELECT count(*) AS n FROM events WHERE id = ANY($1::uuid[])',
          [ids],
        );
        seen.push(Number(rows[0]?.n) === ids.length);
      });
    };
    listener.on('notification', onNotification);
    try {
      for (let i = 0; i < 20; i += 1) await store.insertMany([newEvent(), newEvent()]);
      await heardIds(40);
      for (let waited = 0; seen.length < payloads.length && waited < 5_000; waited += 20) await delay(20);
      expect(seen.length).toBe(payloads.length);
      expect(seen.every(Boolean)).toBe(true);
    } finally {
      listener.off('notification', onNotification);
      await checker.end();
    }
  });

  it('announces nothing for a batch that stores nothing new', async () => {
    await store.insertMany([newEvent({ externalId: 'only-once' })]);
    await heardIds(1);
    payloads.length = 0;
    await store.insertMany([newEvent({ externalId: 'only-once' })]);
    expect(await heardIds(0)).toEqual([]);
    expect(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM events WHERE external_id = 'only-once'`)).toBe(
      1,
    );
  });

  it('announces once what the group committer (the write path of ingest and queue sources) stores', async () => {
    payloads.length = 0;
    const committer = createGroupCommitter({ store, logger: silentLogger });
    const results = await Promise.all(Array.from({ length: 30 }, () => committer.submit(newEvent())));
    const heard = await heardIds(30);
    expect([...heard].sort()).toEqual(results.map((r) => r.event.id).sort());
  });
});

describe('the announcement format', () => {
  it('fits the most ids one NOTIFY carries under the payload limit', () => {
    const longest = Array.from({ length: IDS_PER_NOTIFY }, () => '01890a5d-ac96-774b-bcce-b302099a8057').join(',');
    expect(Buffer.byteLength(longest)).toBeLessThanOrEqual(MAX_NOTIFY_PAYLOAD_BYTES);
  });

  it('reads the ids of a payload and nothing else', () => {
    const id = '01890a5d-ac96-774b-bcce-b302099a8057';
    expect(announcedIds(`${id},${id.toUpperCase()}`)).toEqual([id, id.toUpperCase()]);
    expect(announcedIds(`x,,${id},'; DROP`)).toEqual([id]);
    expect(announcedIds('')).toEqual([]);
    expect(announcedIds(undefined)).toEqual([]);
  });
});
