import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventSummary } from '../../generated/types.ts';
import { startApiTestServer, type ApiTestServer } from './api-test-server.ts';
import {
  call,
  openStream,
  sendOpen,
  sendSignedGithub,
  sendToken,
  waitFor,
  type SseConnection,
} from './http-helpers.ts';

let server: ApiTestServer;
const HEARTBEAT_MS = 150;

beforeAll(async () => {
  server = await startApiTestServer({ heartbeatMs: HEARTBEAT_MS, maxBackfill: 25 });
});
afterAll(() => server?.close());

const summaries = (conn: SseConnection): EventSummary[] =>
  conn.messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data) as EventSummary);

describe('GET /api/stream', () => {
  it('opens an event stream and delivers a new event within a second', async () => {
    const conn = await openStream(server);
    try {
      expect(conn.status).toBe(200);
      expect(conn.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(conn.headers['cache-control']).toBe('no-store');
      expect(conn.headers['x-content-type-options']).toBe('nosniff');
      await conn.waitForComments(1);
      expect(conn.retryMs).toBe(2000);

      const { id } = await sendSignedGithub(server);
      const committed = Date.now();
      const [message] = await conn.waitForMessages(1, 1000);
      expect(Date.now() - committed).toBeLessThan(1000);
      expect(message).toMatchObject({ event: 'event', id });
      const summary = JSON.parse(message?.data ?? '{}') as EventSummary;
      expect(summary).toMatchObject({ id, provider: 'github', trust_mode: 'signed', verified: true });
      expect(Object.keys(summary).sort()).toEqual([
        'event_type',
        'id',
        'payload_size',
        'provider',
        'received_at',
        'trust_mode',
        'verified',
      ]);
    } finally {
      conn.close();
    }
  });

  it('sends heartbeat comments while idle', async () => {
    const conn = await openStream(server);
    try {
      await conn.waitForComments(1);
      const before = conn.comments;
      await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 3.5));
      expect(conn.comments - before).toBeGreaterThanOrEqual(2);
      expect(conn.messages).toEqual([]);
    } finally {
      conn.close();
    }
  });

  it('resumes from Last-Event-ID with every missed event once, in order, then goes live', async () => {
    const first = await openStream(server);
    const seen: string[] = [];
    let lastId: string;
    try {
      lastId = await sendOpen(server, '{"type":"resume.first"}');
      await first.waitForMessages(1);
      seen.push(...summaries(first).map((s) => s.id));
      expect(seen).toEqual([lastId]);
    } finally {
      first.close();
    }
    // While disconnected: events arrive that the client must not miss.
    const missed: string[] = [];
    for (let i = 0; i < 5; i++) missed.push(await sendToken(server, { type: `resume.missed.${i}` }));

    const second = await openStream(server, { lastEventId: lastId });
    try {
      await second.waitForMessages(5);
      // And a concurrent burst while the backlog is being read: no gap, no duplicate.
      const live = await Promise.all(
        [0, 1, 2].map((i) => sendOpen(server, JSON.stringify({ type: `resume.live.${i}` }))),
      );
      await second.waitForMessages(8);
      await new Promise((r) => setTimeout(r, 300));
      const ids = summaries(second).map((s) => s.id);
      expect(ids.slice(0, 5)).toEqual(missed);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.slice(5).sort()).toEqual([...live].sort());
      expect(ids).not.toContain(lastId);
      // Each message's SSE id is the event id, so the next resume starts from the right place.
      expect(second.messages.map((m) => m.id)).toEqual(ids);
    } finally {
      second.close();
    }
  });

  it('resumes without gaps across many reconnects while events keep arriving', async () => {
    const received: string[] = [];
    const sent: string[] = [];
    let lastId: string | undefined = await sendOpen(server, '{"type":"churn.start"}');
    const sending = (async () => {
      for (let i = 0; i < 20; i++) {
        sent.push(await sendOpen(server, JSON.stringify({ type: 'churn', i })));
        await new Promise((r) => setTimeout(r, 15));
      }
    })();
    for (let round = 0; round < 6; round++) {
      const conn: SseConnection = await openStream(server, lastId === undefined ? {} : { lastEventId: lastId });
      await new Promise((r) => setTimeout(r, 60));
      conn.close();
      const got = summaries(conn).map((s) => s.id);
      received.push(...got);
      lastId = got.at(-1) ?? lastId;
    }
    await sending;
    const tail = await openStream(server, { lastEventId: lastId ?? '' });
    await new Promise((r) => setTimeout(r, 300));
    tail.close();
    received.push(...summaries(tail).map((s) => s.id));
    expect(new Set(received).size).toBe(received.length);
    expect(received).toEqual(sent);
  });

  it('sends reset when the Last-Event-ID is unknown or too far behind', async () => {
    const unknown = await openStream(server, { lastEventId: '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e' });
    try {
      const [message] = await unknown.waitForMessages(1);
      expect(message?.event).toBe('reset');
      expect(JSON.parse(message?.data ?? '{}')).toEqual({ reason: expect.stringMatching(/not a stored event/) });
    } finally {
      unknown.close();
    }
    const from = await sendOpen(server, '{"type":"far.behind"}');
    for (let i = 0; i < 26; i++) await sendOpen(server, JSON.stringify({ type: 'flood', i }));
    const behind = await openStream(server, { lastEventId: from });
    try {
      const [message] = await behind.waitForMessages(1);
      expect(message?.event).toBe('reset');
      // Live delivery goes on after the reset. (Notifications of the flood itself may still be in
      // flight when the stream subscribes; after a reset the client reloads, so they are harmless.)
      const id = await sendOpen(server, '{"type":"after.reset"}');
      await waitFor(() => behind.messages.some((m) => m.id === id), 5000, 'the live event after the reset');
      expect(behind.messages.find((m) => m.id === id)?.event).toBe('event');
    } finally {
      behind.close();
    }
  });

  it('refuses a malformed Last-Event-ID, a missing token and a foreign host', async () => {
    const bad = await call(server, '/api/stream', { headers: { 'last-event-id': 'yesterday' } });
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'invalid_argument' } });
    const anonymous = await call(server, '/api/stream', { token: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
    const foreign = await call(server, '/api/stream', { headers: { host: 'attacker.example:80' } });
    expect(foreign.status).toBe(403);
  });

  it('ends open streams when the server shuts down', async () => {
    const own = await startApiTestServer({ heartbeatMs: HEARTBEAT_MS });
    const conn = await openStream(own);
    await conn.waitForComments(1);
    await own.close();
    await conn.ended;
  });
});
