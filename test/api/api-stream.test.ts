import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventSummary } from '../../generated/types.ts';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { createLogger } from '../../src/log/logger.ts';
import { isBefore } from '../../src/shared/list-order.ts';
import { createTokenRepository } from '../../src/store/records/token-repository.ts';
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
import { SUMMARY_FIELDS } from '../support/events.ts';

let server: ApiTestServer;
const HEARTBEAT_MS = 150;

beforeAll(async () => {
  server = await startApiTestServer({ heartbeatMs: HEARTBEAT_MS, maxBackfill: 25 });
});
afterAll(() => server?.close());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const summaries = (conn: SseConnection): ApiEventSummary[] =>
  conn.messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data) as ApiEventSummary);

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
      const summary = JSON.parse(message?.data ?? '{}') as ApiEventSummary;
      expect(summary).toMatchObject({ id, provider: 'github', trust_mode: 'signed', verified: true });
      // The API's summary shape: MCP's fields plus the one-line summary of the payload.
      expect(summary.summary).toBe('Codertocat/Hello-World · master · Initial commit');
      expect(Object.keys(summary).sort()).toEqual(SUMMARY_FIELDS);
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
      // Each message's SSE id is the event id, so the next resume starts from the right place;
      // only an event placed before one already sent (the burst's commits may overtake each
      // other) has none, so the resume point never moves back.
      let newest: ApiEventSummary | undefined;
      const resumePoints = summaries(second).map((s) => {
        if (newest !== undefined && isBefore(s, newest)) return '';
        newest = s;
        return s.id;
      });
      expect(second.messages.map((m) => m.id)).toEqual(resumePoints);
      expect(resumePoints.slice(0, 5)).toEqual(missed);
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

  it('closes a stream within 5 s of its token being revoked, and the token is refused after', async () => {
    const token = await server.createToken('revoked-streamer');
    const conn = await openStream(server, { token });
    try {
      expect(conn.status).toBe(200);
      await conn.waitForComments(1);
      const revokedAt = performance.now();
      await createTokenRepository(server.db.pool).revoke('revoked-streamer');
      const ended = await Promise.race([conn.ended.then(() => performance.now()), sleep(8_000).then(() => null)]);
      expect(ended, 'the stream of a revoked token was never closed').not.toBeNull();
      expect((ended ?? Infinity) - revokedAt).toBeLessThan(5_000);
      const before = conn.messages.length;
      await sendOpen(server, '{"type":"after-revocation"}');
      await sleep(300);
      expect(conn.messages.length).toBe(before);
      expect((await call(server, '/api/stream', { token })).status).toBe(401);
    } finally {
      conn.close();
    }
  });

  it('fetches the summaries of each batch of new events once, whatever the number of open streams', async () => {
    const statements: string[] = [];
    const own = await startApiTestServer({
      heartbeatMs: HEARTBEAT_MS,
      interceptors: [
        {
          name: 'record-summaries',
          beforeQueryExecution: (_context, query) => {
            if (/FROM events\s+WHERE events\.id = ANY/.test(query.sql)) statements.push(query.sql);
            return null;
          },
        },
      ],
    });
    const conns: SseConnection[] = [];
    try {
      for (let i = 0; i < 12; i += 1) conns.push(await openStream(own));
      await Promise.all(conns.map((c) => c.waitForComments(1)));
      statements.length = 0;
      const id = await sendOpen(own, '{"type":"fan-out"}');
      await Promise.all(conns.map((c) => c.waitForMessages(1)));
      for (const c of conns) expect(summaries(c).map((e) => e.id)).toEqual([id]);
      expect(statements).toHaveLength(1);
    } finally {
      for (const c of conns) c.close();
      await own.close();
    }
  });

  it('caps streams per caller at api.max_streams_per_caller (default 20): the next gets 429 with Retry-After and the envelope', async () => {
    const own = await startApiTestServer({ heartbeatMs: HEARTBEAT_MS });
    const conns: SseConnection[] = [];
    try {
      for (let i = 0; i < 20; i += 1) conns.push(await openStream(own));
      expect(conns.map((c) => c.status)).toEqual(Array.from({ length: 20 }, () => 200));
      const refused = await call(own, '/api/stream', { headers: { accept: 'text/event-stream' } });
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      const envelope = refused.json();
      expect(validateErrorEnvelope(envelope)).toBe(true);
      expect(envelope).toMatchObject({ error: { code: 'rate_limited', message: expect.stringMatching(/20 open/) } });
      // Another caller is not affected, and a closed stream frees its slot.
      const other = await openStream(own, { token: await own.createToken('other-streamer') });
      expect(other.status).toBe(200);
      other.close();
      conns.pop()?.close();
      let again: SseConnection | undefined;
      const deadline = Date.now() + 3_000;
      while (again?.status !== 200 && Date.now() < deadline) {
        again?.close();
        again = await openStream(own);
        if (again.status !== 200) await sleep(50);
      }
      expect(again?.status).toBe(200);
      again?.close();
    } finally {
      for (const c of conns) c.close();
      await own.close();
    }
  });

  it('takes the per-caller stream cap from api.max_streams_per_caller', async () => {
    const own = await startApiTestServer({ extraConfig: ['api:', '  max_streams_per_caller: 2'] });
    const conns: SseConnection[] = [];
    try {
      for (let i = 0; i < 3; i += 1) conns.push(await openStream(own));
      expect(conns.map((c) => c.status)).toEqual([200, 200, 429]);
    } finally {
      for (const c of conns) c.close();
      await own.close();
    }
  });

  it('logs a client that disconnects mid-stream at debug, without a stack, and never as an error', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      level: 'debug',
      destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    const own = await startApiTestServer({ heartbeatMs: 20, logger });
    try {
      for (let i = 0; i < 5; i += 1) {
        const conn = await openStream(own);
        await conn.waitForComments(2);
        conn.destroySocket();
      }
      // Heartbeats keep writing to the dead sockets for a while.
      await sleep(500);
      const loud = lines.filter((l) => typeof l['level'] === 'number' && l['level'] >= 40);
      expect(loud).toEqual([]);
      const gone = lines.filter((l) => l['msg'] === 'client went away');
      expect(gone.length).toBeGreaterThan(0);
      for (const line of gone) expect(JSON.stringify(line)).not.toMatch(/"stack"|\n\s+at /);
    } finally {
      await own.close();
    }
  });
});
