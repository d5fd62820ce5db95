import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { sql, type Interceptor } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateApiEventSummary, validateEventDetail, validateEventSummary } from '../../generated/validators.js';
import { AppError } from '../../src/errors/app-error.ts';
import { toEventDetail, toEventSummary } from '../../src/event-wire/event-detail.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;
/** Statements that touched events, to prove a batch is written by one of them. */
const statements: string[] = [];
const recorder: Interceptor = {
  name: 'record-statements',
  beforeQueryExecution: (_context, query) => {
    statements.push(query.sql);
    return null;
  },
};
beforeAll(async () => {
  db = await freshDatabase({ interceptors: [recorder] });
  store = createEventStore(db.pool);
});
afterAll(() => db.close());

const RFC3339_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function bytesOf(detail: ReturnType<typeof toEventDetail>): Buffer {
  return detail.payload.encoding === 'utf8'
    ? Buffer.from(detail.payload.data, 'utf8')
    : Buffer.from(detail.payload.data, 'base64');
}

async function expectInvalid(promise: Promise<unknown>, message?: RegExp): Promise<void> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect(error).toMatchObject({ code: 'invalid_argument' });
  if (message && error instanceof Error) expect(error.message).toMatch(message);
}

describe('insert and get', () => {
  const payloads: Array<[string, Buffer, 'utf8' | 'base64']> = [
    ['JSON', Buffer.from('{"action":"opened","title":"Grüße 👋"}'), 'utf8'],
    ['empty', Buffer.alloc(0), 'utf8'],
    ['UTF-8 with a BOM', Buffer.from([0xef, 0xbb, 0xbf, 0x68, 0x69]), 'utf8'],
    ['text with NUL bytes', Buffer.from('a\u0000b', 'utf8'), 'utf8'],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'base64'],
    ['a truncated multi-byte sequence', Buffer.from([0x61, 0xe2, 0x82]), 'base64'],
    ['an overlong encoding', Buffer.from([0xc0, 0xaf]), 'base64'],
    ['an encoded surrogate (CESU-8)', Buffer.from([0xed, 0xa0, 0x80]), 'base64'],
    ['binary', randomBytes(4096), 'base64'],
    ['1 MiB of JSON', Buffer.from(JSON.stringify({ blob: 'x'.repeat(1024 * 1024) })), 'utf8'],
  ];

  it.each(payloads)('stores %s byte for byte', async (_label, payload, encoding) => {
    const { event, duplicate } = await store.insert(newEvent({ payload }));
    expect(duplicate).toBe(false);
    expect(event.payload_size).toBe(payload.length);
    const stored = await store.get(event.id);
    expect(stored).not.toBeNull();
    if (!stored) return;
    expect(stored.payload.equals(payload)).toBe(true);
    expect(stored.payloadSize).toBe(payload.length);
    const detail = toEventDetail(stored);
    expect(detail.payload.encoding).toBe(encoding);
    expect(bytesOf(detail).equals(payload)).toBe(true);
    expect(validateEventDetail(detail)).toBe(true);
  });

  it('returns every field as stored, received_at with microseconds, in the contract shape', async () => {
    const input = newEvent({
      provider: 'stripe',
      eventType: 'payment_intent.succeeded',
      trustMode: 'signed',
      verified: true,
      verifyDetail: 'stripe-v1 valid (Stripe-Signature)',
      externalId: 'evt_123',
      contentType: 'application/json; charset=utf-8',
      sourceIp: '2001:db8::1',
      headers: { 'stripe-signature': '[redacted]', via: ['1.1 a', '1.1 b'], accept: '*/*' },
    });
    const { event } = await store.insert(input);
    expect(event.received_at).toMatch(RFC3339_MICROS);
    expect(validateEventSummary(event)).toBe(true);
    const stored = await store.get(event.id.toUpperCase());
    expect(stored).toEqual({
      id: event.id,
      provider: 'stripe',
      eventType: 'payment_intent.succeeded',
      trustMode: 'signed',
      verified: true,
      passedCheck: true,
      verifyDetail: 'stripe-v1 valid (Stripe-Signature)',
      externalId: 'evt_123',
      contentType: 'application/json; charset=utf-8',
      sourceIp: '2001:db8::1',
      headers: { 'stripe-signature': '[redacted]', via: ['1.1 a', '1.1 b'], accept: '*/*' },
      payload: input.payload,
      payloadSize: input.payload.length,
      receivedSize: null,
      receivedAt: event.received_at,
      summary: null,
      request: null,
      handshake: false,
    });
    if (stored) expect(toEventSummary(stored)).toEqual(event);
    // The string is the database's value to the microsecond, not a JS Date's millisecond.
    const inDatabase = await db.pool.oneFirst(sql.type(z.object({ t: z.string() }))`
      SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t FROM events WHERE id = ${event.id}
    `);
    expect(event.received_at).toBe(inDatabase);
  });

  it('records whether ingest answered the delivery as a handshake, and null for a row from before (37.5)', async () => {
    const [shake, plain] = await store.insertMany([
      newEvent({ eventType: 'endpoint.url_validation', externalId: null, handshake: true }),
      newEvent({ eventType: 'meeting.started', externalId: null }),
    ]);
    expect((await store.get(shake?.event.id ?? ''))?.handshake).toBe(true);
    expect((await store.get(plain?.event.id ?? ''))?.handshake).toBe(false);
    await db.pool.query(sql.unsafe`UPDATE events SET handshake = NULL WHERE id = ${plain?.event.id ?? ''}`);
    expect((await store.get(plain?.event.id ?? ''))?.handshake).toBeNull();
  });

  it('answers unknown ids with null and malformed ids with invalid_argument', async () => {
    expect(await store.get('01900000-0000-7000-8000-000000000000')).toBeNull();
    await expectInvalid(store.get('not-a-uuid'));
    await expectInvalid(store.get("' OR 1=1 --"));
    await expectInvalid(store.get(''));
  });

  it('stores text that PostgreSQL text cannot hold by replacing NUL and lone surrogates', async () => {
    const { event } = await store.insert(
      newEvent({
        trustMode: 'queue',
        verified: false,
        eventType: 'order\u0000created',
        headers: { 'x-odd': 'a\u0000b\uD800' },
      }),
    );
    expect(event.event_type).toBe('order\uFFFDcreated');
    const stored = await store.get(event.id);
    expect(stored?.headers).toEqual({ 'x-odd': 'a\uFFFDb\uFFFD' });
  });

  it('normalises header lists to the contract shape', async () => {
    const { event } = await store.insert(
      newEvent({
        headers: {
          one: ['only'] as unknown as [string, string],
          none: [] as unknown as [string, string],
          two: ['a', 'b'],
          odd: ['x\u0000', 'y'],
        },
      }),
    );
    expect((await store.get(event.id))?.headers).toEqual({ one: 'only', two: ['a', 'b'], odd: ['x\uFFFD', 'y'] });
  });

  it('validates events before writing anything', async () => {
    await expectInvalid(store.insert(newEvent({ provider: '' })), /provider/);
    await expectInvalid(store.insert(newEvent({ provider: 'p'.repeat(65) })), /provider/);
    await expectInvalid(store.insert(newEvent({ eventType: 'e'.repeat(201) })), /event_type/);
    await expectInvalid(store.insert(newEvent({ trustMode: 'token', verified: true })), /only a signed event/);
    await expectInvalid(store.insertMany([newEvent(), newEvent({ trustMode: 'open', verified: true })]), /^event 1:/);
    expect(await store.insertMany([])).toEqual([]);
  });
});

describe('the check outcome on arrival', () => {
  it('is stored for signed and token events, defaults to not passed for a token event, and is absent for open ones', async () => {
    const outcome = async (overrides: Parameters<typeof newEvent>[0]) => {
      const { event } = await store.insert(newEvent(overrides));
      const stored = await store.get(event.id);
      return { passedCheck: stored?.passedCheck, detail: stored && toEventDetail(stored).passed_check };
    };
    expect(await outcome({ trustMode: 'signed', verified: true })).toEqual({ passedCheck: true, detail: true });
    expect(await outcome({ trustMode: 'signed', verified: false })).toEqual({ passedCheck: false, detail: false });
    expect(await outcome({ trustMode: 'token', verified: false, passedCheck: true })).toEqual({
      passedCheck: true,
      detail: true,
    });
    expect(await outcome({ trustMode: 'token', verified: false, passedCheck: false })).toEqual({
      passedCheck: false,
      detail: false,
    });
    // A writer that records nothing never makes a token event look checked.
    expect(await outcome({ trustMode: 'token', verified: false })).toEqual({ passedCheck: false, detail: false });
    expect(await outcome({ trustMode: 'open', verified: false })).toEqual({ passedCheck: null, detail: undefined });
    expect(await outcome({ trustMode: 'queue', verified: false })).toEqual({ passedCheck: null, detail: undefined });
  });

  it('refuses an outcome that contradicts the trust mode, in the store and in the database', async () => {
    await expectInvalid(store.insert(newEvent({ trustMode: 'open', verified: false, passedCheck: true })), /check/);
    await expectInvalid(
      store.insert(newEvent({ trustMode: 'signed', verified: false, passedCheck: true })),
      /verified/,
    );
    for (const [trustMode, constraint] of [
      ['signed', 'events_passed_check_is_verified'],
      ['open', 'events_passed_check_only_checked'],
    ] as const) {
      await expect(
        db.pool.query(sql.unsafe`
          INSERT INTO events (id, provider, event_type, trust_mode, verified, passed_check, verify_detail, payload)
          VALUES (${uuidv7()}, 'x', 'y', ${trustMode}, false, true, 'forged', '\\x7b7d'::bytea)
        `),
      ).rejects.toMatchObject({ constraint });
    }
  });
});

describe('idempotent receive', () => {
  it('stores a retried delivery once and answers the stored event with duplicate: true', async () => {
    const first = await store.insert(
      newEvent({ provider: 'github', externalId: 'delivery-1', payload: Buffer.from('first') }),
    );
    const retry = await store.insert(
      newEvent({ provider: 'github', externalId: 'delivery-1', payload: Buffer.from('second') }),
    );
    expect(first.duplicate).toBe(false);
    expect(retry).toEqual({ event: first.event, duplicate: true });
    expect((await store.get(first.event.id))?.payload.toString()).toBe('first');
    // The same delivery id from another provider is another event.
    const other = await store.insert(
      newEvent({ provider: 'gitlab', trustMode: 'token', verified: false, externalId: 'delivery-1' }),
    );
    expect(other.duplicate).toBe(false);
    expect(other.event.id).not.toBe(first.event.id);
  });

  it('never deduplicates events without an external id', async () => {
    const a = await store.insert(newEvent({ externalId: null }));
    const b = await store.insert(newEvent({ externalId: null }));
    expect(a.event.id).not.toBe(b.event.id);
    expect([a.duplicate, b.duplicate]).toEqual([false, false]);
  });

  it('writes a dedupe key only for an event with an external id, and fires no trigger on events', async () => {
    // Migration 0021: the insert statement writes the key and the search queue entry itself.
    expect(
      await db.pool.anyFirst(sql.type(z.object({ tgname: z.string() }))`
        SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal
          AND (tgtype & 4) <> 0
      `),
    ).toEqual([]);
    const keyCount = async (ids: readonly string[]): Promise<number> =>
      db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM event_external_ids WHERE event_id = ANY(${sql.array(ids, 'uuid')})
      `);
    const [without, withKey] = await store.insertMany([
      newEvent({ externalId: null }),
      newEvent({ externalId: `keyed-${uuidv7()}` }),
    ]);
    const ids = [without?.event.id ?? '', withKey?.event.id ?? ''];
    expect(await keyCount([ids[0] ?? ''])).toBe(0);
    expect(await keyCount([ids[1] ?? ''])).toBe(1);
    const queued = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM event_search_queue WHERE event_id = ANY(${sql.array(ids, 'uuid')})
    `);
    expect(queued).toBe(2);
  });

  it('handles duplicates inside one batch and across batches, in input order', async () => {
    const prior = await store.insert(newEvent({ provider: 'batch', externalId: 'x0' }));
    const results = await store.insertMany([
      newEvent({ provider: 'batch', externalId: 'x1' }),
      newEvent({ provider: 'batch', externalId: 'x0' }),
      newEvent({ provider: 'batch', externalId: 'x1' }),
      newEvent({ provider: 'batch', externalId: null }),
      newEvent({ provider: 'other', externalId: 'x1' }),
      newEvent({ provider: 'batch', externalId: 'x2' }),
      newEvent({ provider: 'batch', externalId: 'x1' }),
    ]);
    expect(results.map((r) => r.duplicate)).toEqual([false, true, true, false, false, false, true]);
    const [x1, x0, x1again, , otherX1, x2, x1third] = results;
    expect(x0?.event).toEqual(prior.event);
    expect(x1again?.event).toEqual(x1?.event);
    expect(x1third?.event).toEqual(x1?.event);
    expect(otherX1?.event.id).not.toBe(x1?.event.id);
    const next = await store.insertMany([
      newEvent({ provider: 'batch', externalId: 'x2' }),
      newEvent({ provider: 'batch', externalId: 'x3' }),
    ]);
    expect(next.map((r) => r.duplicate)).toEqual([true, false]);
    expect(next[0]?.event).toEqual(x2?.event);
    const count = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM events WHERE provider = 'batch' AND external_id IS NOT NULL
    `);
    expect(count).toBe(4);
  });

  it('stores one row when the same delivery arrives on many connections at once', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.insert(newEvent({ provider: 'race', externalId: 'same', payload: Buffer.from(String(i)) })),
      ),
    );
    const ids = new Set(attempts.map((a) => a.event.id));
    expect(ids.size).toBe(1);
    expect(attempts.filter((a) => !a.duplicate)).toHaveLength(1);
  });

  it('writes a batch with retries inside it in one statement; a retry of a stored event adds one lookup', async () => {
    statements.length = 0;
    const fresh = await store.insertMany(
      Array.from({ length: 200 }, (_, i) => newEvent({ provider: 'fresh', externalId: `d${i % 150}` })),
    );
    expect(statements).toHaveLength(1);
    expect(fresh.filter((r) => r.duplicate)).toHaveLength(50);

    await store.insert(newEvent({ provider: 'one', externalId: 'seen' }));
    statements.length = 0;
    const results = await store.insertMany([
      ...Array.from({ length: 200 }, (_, i) => newEvent({ provider: 'one', externalId: `d${i % 150}` })),
      newEvent({ provider: 'one', externalId: 'seen' }),
    ]);
    expect(statements).toHaveLength(2);
    expect(results.filter((r) => r.duplicate)).toHaveLength(51);
  });

  it('splits only very large batches, keeping duplicates across the split consistent', async () => {
    statements.length = 0;
    const events = Array.from({ length: 1_100 }, (_, i) =>
      newEvent({
        provider: 'huge',
        externalId: i === 1_050 || i === 5 ? 'twice' : `h${i}`,
        payload: Buffer.from([i % 256]),
      }),
    );
    const results = await store.insertMany(events);
    expect(statements.filter((text) => text.includes('INSERT INTO events'))).toHaveLength(2);
    expect(results[1_050]).toEqual({ event: results[5]?.event, duplicate: true });
    expect(results.filter((r) => r.duplicate)).toHaveLength(1);
    expect(results.map((r) => r.event.payload_size)).toEqual(events.map(() => 1));
  });

  it('keeps every result in input order for random batches (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { nil: null }), { minLength: 1, maxLength: 30 }),
        async (keys) => {
          const provider = `prop-${randomBytes(4).toString('hex')}`;
          const results = await store.insertMany(
            keys.map((externalId, i) => newEvent({ provider, externalId, payload: Buffer.from(String(i)) })),
          );
          const seen = new Map<string, string>();
          results.forEach((result, i) => {
            const key = keys[i];
            if (key === null || key === undefined) {
              expect(result.duplicate).toBe(false);
              return;
            }
            const first = seen.get(key);
            expect(result.duplicate).toBe(first !== undefined);
            if (first === undefined) seen.set(key, result.event.id);
            else expect(result.event.id).toBe(first);
          });
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('the summary line and the original request', () => {
  const request = { method: 'POST', path: '/hooks/github', query: 'team=core&token=[redacted]', responseStatus: 200 };

  it('stores both, serves them in the detail and the API list, and leaves the summary out of the MCP list', async () => {
    const { event } = await store.insert(newEvent({ summary: 'octo/api · opened #7 · Grüße 👋', request }));
    const other = await store.insert(newEvent());
    const stored = await store.get(event.id);
    expect(stored?.summary).toBe('octo/api · opened #7 · Grüße 👋');
    expect(stored?.request).toEqual(request);
    const detail = stored ? toEventDetail(stored) : null;
    expect(detail).toMatchObject({
      summary: 'octo/api · opened #7 · Grüße 👋',
      request: { method: 'POST', path: '/hooks/github', query: 'team=core&token=[redacted]', response_status: 200 },
    });
    expect(validateEventDetail(detail)).toBe(true);

    const ids = [other.event.id, event.id];
    const api = (await store.listWithSummaries({ limit: 200 })).events.filter((e) => ids.includes(e.id));
    expect(api.map((e) => e.summary)).toEqual([undefined, 'octo/api · opened #7 · Grüße 👋']);
    expect(api.every((e) => validateApiEventSummary(e))).toBe(true);
    const mcp = (await store.list({ limit: 200 })).events.filter((e) => ids.includes(e.id));
    expect(mcp).toHaveLength(2);
    for (const e of mcp) {
      expect('summary' in e).toBe(false);
      expect(validateEventSummary(e)).toBe(true);
    }
    expect((await store.summaries([event.id]))[0]?.summary).toBe('octo/api · opened #7 · Grüße 👋');

    // Without a request (queue messages) the detail has none.
    const plain = await store.get(other.event.id);
    expect(plain && 'request' in toEventDetail(plain)).toBe(false);
  });

  it('corrects the answered status of a row that recorded a request, and of no other', async () => {
    const withRequest = (await store.insert(newEvent({ request }))).event.id;
    const queued = (await store.insert(newEvent({ trustMode: 'queue', verified: false }))).event.id;
    await store.recordResponseStatus(withRequest, 503);
    await store.recordResponseStatus(queued, 503);
    expect((await store.get(withRequest))?.request?.responseStatus).toBe(503);
    expect((await store.get(queued))?.request).toBeNull();
    await expectInvalid(store.recordResponseStatus(withRequest, 42), /HTTP status/);
    await expectInvalid(store.recordResponseStatus('nope', 503));
  });

  it('refuses a summary longer than the contract allows and a request out of bounds', async () => {
    await store.insert(newEvent({ summary: '👋'.repeat(120) }));
    await expectInvalid(store.insert(newEvent({ summary: '👋'.repeat(121) })), /summary/);
    await expectInvalid(store.insert(newEvent({ summary: '' })), /summary/);
    await expectInvalid(store.insert(newEvent({ request: { ...request, query: 'q'.repeat(2049) } })), /request query/);
    await expectInvalid(store.insert(newEvent({ request: { ...request, method: '' } })), /request method/);
    await expectInvalid(store.insert(newEvent({ request: { ...request, responseStatus: 600 } })), /HTTP status/);
  });
});

describe('summaries', () => {
  it('answers in the order given, skipping unknown ids', async () => {
    const [a, b] = await store.insertMany([newEvent(), newEvent()]);
    if (!a || !b) throw new Error('insert failed');
    const unknown = '01900000-0000-7000-8000-000000000000';
    expect(await store.summaries([b.event.id, unknown, a.event.id.toUpperCase()])).toEqual([b.event, a.event]);
    expect(await store.summaries([])).toEqual([]);
    await expectInvalid(store.summaries(['nope']));
  });
});
