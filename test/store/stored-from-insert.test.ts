/**
 * The reply path sends the event its insert has just committed without reading it back
 * (storedEventFromInsert): what it builds must be what a read of the row answers, field for field,
 * for every trust mode and for the shapes an arrival can have (a request, a cut payload, an
 * explicit or implied check outcome), or the app would be sent something other than the event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedEventFromInsert } from '../../src/store/events/event-mapping.ts';
import type { NewEvent } from '../../src/store/events/event-store.ts';
import { createEventStore, type PgEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';

let db: TestDatabase;
let store: PgEventStore;
beforeAll(async () => {
  db = await freshDatabase();
  store = createEventStore(db.pool);
});
afterAll(() => db.close());

const request = { method: 'POST', path: '/hooks/teams', query: 'a=1', responseStatus: 200 };

const cases: Array<[string, Partial<NewEvent>]> = [
  ['a signed event that passed, with its request', { request, summary: 'Megan Bowen · status?' }],
  ['a signed event that failed its check', { verified: false, passedCheck: false }],
  ['a token event whose outcome is implied', { trustMode: 'token', verified: false, provider: 'telegram' }],
  ['a token event that passed', { trustMode: 'token', verified: false, passedCheck: true, externalId: 'u-1' }],
  ['an open event', { trustMode: 'open', verified: false, contentType: null, sourceIp: null }],
  ['a cut payload', { payload: Buffer.from('{"a":'), receivedSize: 99_000 }],
  [
    'text the insert must replace (NUL, a lone surrogate)',
    { summary: 'a\u0000b', verifyDetail: 'ok\uD800', headers: { 'x-a': 'v\u0000', 'x-b': ['1', '2'] }, request },
  ],
];

describe('storedEventFromInsert', () => {
  it.each(cases)('%s: equals the stored row as get() reads it', async (_name, overrides) => {
    const event = newEvent(overrides);
    const inserted = await store.insert(event);
    const read = await store.get(inserted.event.id);
    expect(storedEventFromInsert(event, inserted.event)).toEqual(read);
  });
});
