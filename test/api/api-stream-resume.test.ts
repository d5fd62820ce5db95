/**
 * /api/stream when a Last-Event-ID resume overlaps live events: the notification of an event can
 * reach the server after the event was already read from the store (the LISTEN connection and the
 * pool are separate, and a loaded machine delays either), and a concurrent writer can commit an
 * event after a newer one was sent. Neither may make a client that resumes from the last SSE id it
 * got receive an event twice. The bus runs through a proxy that holds notifications, so the test
 * decides when they arrive.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventSummary } from '../../generated/types.ts';
import { microsecondBefore } from '../../src/listen/position.ts';
import { ANNOUNCE_CHANNEL } from '../../src/store/events/announcement.ts';
import { insertAt } from '../support/events.ts';
import { startApiTestServer, type ApiTestServer } from './api-test-server.ts';
import { openStream, sendOpen, waitFor, type SseConnection } from './http-helpers.ts';

let server: ApiTestServer;

beforeAll(async () => {
  server = await startApiTestServer({ busViaProxy: true, heartbeatMs: 150 });
});
afterAll(() => server?.close());

const eventMessages = (conn: SseConnection) => conn.messages.filter((m) => m.event === 'event');
const eventSummaries = (conn: SseConnection): ApiEventSummary[] =>
  eventMessages(conn).map((m) => JSON.parse(m.data) as ApiEventSummary);
const eventIds = (conn: SseConnection): string[] => eventSummaries(conn).map((s) => s.id);
/** What an EventSource (and the UI) resumes from: the last SSE id it was given. */
const lastSseId = (conn: SseConnection): string | undefined =>
  eventMessages(conn)
    .map((m) => m.id)
    .filter((id) => id !== '')
    .at(-1);

async function waitForEvent(conn: SseConnection, id: string): Promise<void> {
  await waitFor(() => eventIds(conn).includes(id), 5_000, `event ${id} on the stream`);
}

describe('GET /api/stream: a resume that overlaps live events', () => {
  it('does not send again an event the client had before its notification reached the server', async () => {
    const anchor = await sendOpen(server, '{"type":"overlap.anchor"}');
    server.holdBus();
    const missed = [
      await sendOpen(server, '{"type":"overlap.missed","i":0}'),
      await sendOpen(server, '{"type":"overlap.missed","i":1}'),
    ];
    // The client resumes from the anchor: both events come from the backlog, while their
    // notifications are still on the way.
    const first = await openStream(server, { lastEventId: anchor });
    await first.waitForMessages(2);
    first.close();
    const received = eventIds(first);
    expect(received).toEqual(missed);

    // It drops and resumes again; only now do the notifications arrive, at the new stream.
    const second = await openStream(server, { lastEventId: lastSseId(first) ?? '' });
    try {
      await second.waitForComments(1);
      server.releaseBus();
      const next = await sendOpen(server, '{"type":"overlap.next"}');
      // Notifications are handled in order: once `next` is here, the held ones were dealt with.
      await waitForEvent(second, next);
      received.push(...eventIds(second));
      expect(received).toEqual([...missed, next]);
    } finally {
      server.releaseBus();
      second.close();
    }
  });

  it('gives an event that commits behind a newer one no SSE id, so resuming repeats nothing', async () => {
    const conn = await openStream(server);
    const received: string[] = [];
    let newer: string;
    let late = '';
    try {
      await conn.waitForComments(1);
      newer = await sendOpen(server, '{"type":"late.newer"}');
      await waitForEvent(conn, newer);
      const newerAt = eventSummaries(conn).find((s) => s.id === newer)?.received_at ?? '';
      // A concurrent writer's event, stamped before `newer`, commits (and is announced) after it.
      [late = ''] = await insertAt(
        server.db.pool,
        [{ provider: 'hooks', eventType: 'late.older' }],
        microsecondBefore(newerAt) ?? '',
      );
      await server.db.pool.query(sql.unsafe`SELECT pg_notify(${ANNOUNCE_CHANNEL}, ${late})`);
      await waitForEvent(conn, late);
    } finally {
      conn.close();
    }
    received.push(...eventIds(conn));
    // Resuming from the last SSE id, as EventSource and the UI do, sends neither again.
    const resumed = await openStream(server, { lastEventId: lastSseId(conn) ?? '' });
    try {
      const after = await sendOpen(server, '{"type":"late.after"}');
      await waitForEvent(resumed, after);
      received.push(...eventIds(resumed));
      expect(received).toEqual([newer, late, after]);
      expect(eventMessages(conn).map((m) => m.id)).toEqual([newer, '']);
    } finally {
      resumed.close();
    }
  });
});
