import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  INITIALIZE,
  MCP_HEADERS,
  openRawStream,
  rawRequest,
  type RawResponse,
  type RawStream,
} from './support/raw-http.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { startControlledProxy } from '../support/tcp-proxy.ts';
import { fetchInChild } from '../support/fetch-in-child.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { deliverOpen } from './support/webhooks.ts';

const MIB = 1024 * 1024;

function expectSecurityHeaders(headers: IncomingHttpHeaders, what: string): void {
  expect(headers['content-security-policy'], what).toMatch(/^default-src 'none'(;|$)/);
  expect(headers['x-frame-options'], what).toBe('DENY');
  expect(headers['x-content-type-options'], what).toBe('nosniff');
  expect(headers['referrer-policy'], what).toBe('strict-origin-when-cross-origin');
}

let h: Harness;
let auth: { authorization: string };

beforeAll(async () => {
  h = await startMcpHarness({
    config: {
      // The tests below open many sessions with the one token.
      mcp: { max_sessions: 50, max_sessions_per_caller: 50, session_idle_seconds: 600 },
      server: { allowed_hosts: ['switchboard.internal', 'proxy.example:8443'] },
    },
  });
  auth = { authorization: `Bearer ${h.token}` };
});
afterAll(() => h?.close());

async function initialize(headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth, ...headers }, body: JSON.stringify(INITIALIZE) });
}

async function openSession(): Promise<string> {
  const response = await initialize();
  expect(response.status).toBe(200);
  const id = response.headers['mcp-session-id'];
  expect(typeof id).toBe('string');
  const initialized = await rawRequest(h.port, {
    headers: { ...MCP_HEADERS, ...auth, 'mcp-session-id': String(id), 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(initialized.status).toBe(202);
  return String(id);
}

describe('hardened transport', () => {
  it('Security headers on every response: 200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 429 and 503 all carry them', async () => {
    const seen = new Map<number, IncomingHttpHeaders>();
    const record = (response: RawResponse, expected: number): void => {
      expect(response.status, response.body).toBe(expected);
      seen.set(expected, response.headers);
    };
    const sessionId = await openSession();
    const inSession = { ...MCP_HEADERS, ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };

    record(await initialize(), 200);
    record(
      await rawRequest(h.port, {
        headers: inSession,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      }),
      202,
    );
    record(
      await rawRequest(h.port, {
        headers: { ...MCP_HEADERS, ...auth },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
      }),
      400,
    );
    record(await rawRequest(h.port, { headers: MCP_HEADERS, body: JSON.stringify(INITIALIZE) }), 401);
    record(
      await rawRequest(h.port, {
        headers: { ...MCP_HEADERS, ...auth, host: 'evil.example.com' },
        body: JSON.stringify(INITIALIZE),
      }),
      403,
    );
    record(
      await rawRequest(h.port, {
        headers: { ...inSession, 'mcp-session-id': 'no-such-session' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }),
      }),
      404,
    );
    record(await rawRequest(h.port, { method: 'PUT', headers: { ...MCP_HEADERS, ...auth }, body: '{}' }), 405);
    record(
      await rawRequest(h.port, {
        headers: { ...inSession, accept: 'text/html' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }),
      }),
      406,
    );
    record(await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: Buffer.alloc(MIB + 1, 0x20) }), 413);
    record(
      await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth, 'content-type': 'text/plain' }, body: '{}' }),
      415,
    );

    const sse = await rawRequest(h.port, {
      method: 'GET',
      headers: { ...auth, accept: 'text/event-stream', 'mcp-session-id': sessionId },
      readForMs: 300,
    });
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toBe('text/event-stream');
    expectSecurityHeaders(sse.headers, 'GET SSE stream');
    const notFoundPath = await rawRequest(h.port, { method: 'GET', path: '/mcp/anything', headers: auth });
    expect(notFoundPath.status).toBe(404);
    expectSecurityHeaders(notFoundPath.headers, '/mcp/anything');
    const deleted = await rawRequest(h.port, {
      method: 'DELETE',
      headers: { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
    });
    expect(deleted.status).toBe(200);
    expectSecurityHeaders(deleted.headers, 'DELETE');

    const strict = await startMcpHarness({
      db: h.db,
      config: {
        mcp: { max_sessions: 1, session_idle_seconds: 600 },
        rate_limits: { read: { capacity: 2, refill_per_second: 0.01 } },
      },
    });
    try {
      const strictInit = (): Promise<RawResponse> =>
        rawRequest(strict.port, {
          headers: { ...MCP_HEADERS, authorization: `Bearer ${strict.token}` },
          body: JSON.stringify(INITIALIZE),
        });
      const first = await strictInit();
      expect(first.status).toBe(200);
      // An active session (its GET stream open) is never evicted, so the cap holds.
      const held = await openRawStream(strict.port, {
        authorization: `Bearer ${strict.token}`,
        accept: 'text/event-stream',
        'mcp-session-id': String(first.headers['mcp-session-id']),
        'mcp-protocol-version': '2025-06-18',
      });
      expect(held.status).toBe(200);
      record(await strictInit(), 503);
      record(await strictInit(), 429);
      held.close();
      expect(seen.get(429)?.['retry-after']).toMatch(/^\d+$/);
      expect(seen.get(503)?.['retry-after']).toMatch(/^\d+$/);
    } finally {
      await strict.close();
    }
    for (const [status, headers] of seen) expectSecurityHeaders(headers, `status ${status}`);
    expect([...seen.keys()].sort((a, b) => a - b)).toEqual([
      200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 429, 503,
    ]);
  });

  it('Oversized body is rejected before parsing: 413 with or without Content-Length, and no session comes of it', async () => {
    const padded = (size: number): string => {
      const base = JSON.stringify({ ...INITIALIZE, params: { ...INITIALIZE.params, padding: '' } });
      return base.replace('"padding":""', `"padding":"${'x'.repeat(size - base.length)}"`);
    };
    const before = h.surface.sessionCount();
    const tooBig = padded(MIB + 1);
    expect(Buffer.byteLength(tooBig)).toBe(MIB + 1);

    const declared = await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: tooBig });
    expect(declared.status).toBe(413);
    expect(validateErrorEnvelope(JSON.parse(declared.body))).toBe(true);
    const undeclared = await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: tooBig, chunked: true });
    expect(undeclared.status).toBe(413);
    const huge = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...auth, 'content-length': String(64 * MIB) },
      body: 'x'.repeat(1024),
    });
    expect(huge.status).toBe(413);
    // Had either been parsed, it would have started a session: it is a valid initialize.
    expect(h.surface.sessionCount()).toBe(before);

    const atLimit = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...auth },
      body: padded(MIB),
      chunked: true,
    });
    expect(atLimit.status).toBe(200);
    expect(h.surface.sessionCount()).toBe(before + 1);
  });

  it("Oversized body closes the connection with a lingering close, so Node's fetch of a 6 MiB POST reads the 413", async () => {
    // fetch runs in a child process, as a real client would; it is still sending when the 413 is
    // written, so the answer survives only if the server reads on after it instead of resetting.
    const statuses = await fetchInChild(`http://127.0.0.1:${h.port}/mcp`, 6 * MIB, 4, {
      ...MCP_HEADERS,
      ...auth,
    });
    expect(statuses).toEqual(Array(4).fill('413 payload_too_large'));
  });

  it('Foreign Host header is refused: a foreign Host or Origin gets 403, the bind address and allowed_hosts get through', async () => {
    const port = h.port;
    const attempt = (headers: Record<string, string>): Promise<RawResponse> =>
      rawRequest(port, { headers: { ...MCP_HEADERS, ...auth, ...headers }, body: JSON.stringify(INITIALIZE) });

    for (const host of [
      'evil.example.com',
      `evil.example.com:${port}`,
      `127.0.0.1:${port + 1}`,
      '127.0.0.1',
      `localhost.evil.com:${port}`,
      `[::2]:${port}`,
      'proxy.example:8080',
    ]) {
      const response = await attempt({ host });
      expect(response.status, host).toBe(403);
      expect(response.body).not.toContain('evil');
      expect(validateErrorEnvelope(JSON.parse(response.body))).toBe(true);
    }
    for (const origin of [
      'http://evil.example.com',
      `http://evil.example.com:${port}`,
      `http://localhost:${port + 1}`,
      'null',
      `ftp://127.0.0.1:${port}`,
    ]) {
      expect((await attempt({ origin })).status, origin).toBe(403);
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      `[::1]:${port}`,
      'switchboard.internal',
      'switchboard.internal:9999',
      'proxy.example:8443',
    ]) {
      expect((await attempt({ host })).status, host).toBe(200);
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, 'https://switchboard.internal']) {
      expect((await attempt({ origin })).status, origin).toBe(200);
    }
    // Refused before authentication: a rebinding page learns nothing, not even that a token is needed.
    const unauthenticated = await rawRequest(port, {
      headers: { ...MCP_HEADERS, host: 'evil.example.com' },
      body: '{}',
    });
    expect(unauthenticated.status).toBe(403);
    expect(unauthenticated.headers['www-authenticate']).toBeUndefined();
  });

  it('Transport refusals carry their own codes: 401 unauthenticated, 403 forbidden, 405 method_not_allowed, 413 payload_too_large, 503 unavailable', async () => {
    const expectCode = (response: RawResponse, status: number, code: string): void => {
      expect(response.status, response.body).toBe(status);
      const body: unknown = JSON.parse(response.body);
      expect(validateErrorEnvelope(body), response.body).toBe(true);
      expect(body).toMatchObject({ error: { code } });
    };
    const noToken = await rawRequest(h.port, { headers: MCP_HEADERS, body: JSON.stringify(INITIALIZE) });
    expectCode(noToken, 401, 'unauthenticated');
    expect(noToken.headers['www-authenticate']).toMatch(/^Bearer realm="switchboard", error_description=/);
    const badToken = await initialize({ authorization: 'Bearer sbt_not-a-real-token' });
    expectCode(badToken, 401, 'unauthenticated');
    expect(badToken.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    expectCode(await initialize({ host: 'evil.example' }), 403, 'forbidden');
    const put = await rawRequest(h.port, { method: 'PUT', headers: { ...MCP_HEADERS, ...auth }, body: '{}' });
    expectCode(put, 405, 'method_not_allowed');
    expect(put.headers['allow']).toBe('GET, POST, DELETE');
    expectCode(
      await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: Buffer.alloc(MIB + 1, 0x20) }),
      413,
      'payload_too_large',
    );

    // A managed token is looked up in the database: with the database gone that is 503, to retry.
    const target = new URL(h.db.url);
    const proxy = await startControlledProxy(target.hostname, Number(target.port || 5432));
    const pool = await createDatabasePool(proxy.via(h.db.url), { maximumPoolSize: 2 });
    const down = await startMcpHarness({ db: { ...h.db, pool } });
    try {
      await proxy.down();
      const refused = await rawRequest(down.port, {
        headers: { ...MCP_HEADERS, authorization: `Bearer ${down.token}` },
        body: JSON.stringify(INITIALIZE),
      });
      expectCode(refused, 503, 'unavailable');
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expectSecurityHeaders(refused.headers, '503 unavailable');
    } finally {
      await proxy.up();
      await down.close();
      await pool.end();
      await proxy.close();
    }
  });

  it('keeps /healthz public while /mcp needs a token', async () => {
    const health = await fetch(`${h.origin}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', role: 'all' });
    const mcp = await fetch(h.url, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INITIALIZE) });
    expect(mcp.status).toBe(401);
  });
});

describe('sessions', () => {
  it('DELETE ends a session: its id is unknown afterwards', async () => {
    const before = h.surface.sessionCount();
    const id = await openSession();
    expect(h.surface.sessionCount()).toBe(before + 1);
    const headers = { ...auth, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
    expect((await rawRequest(h.port, { method: 'DELETE', headers })).status).toBe(200);
    expect(h.surface.sessionCount()).toBe(before);
    const after = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
    });
    expect(after.status).toBe(404);
  });

  it('binds a session to the token that opened it: another token sees 404', async () => {
    const id = await openSession();
    const { token: other } = await h.tokens.create('other-agent');
    const response = await rawRequest(h.port, {
      headers: {
        ...MCP_HEADERS,
        authorization: `Bearer ${other}`,
        'mcp-session-id': id,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
    const own = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...auth, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/list' }),
    });
    expect(own.status).toBe(200);
    expect(own.body).toContain('list_webhook_events');
  });

  it('caps the number of sessions: over the cap initialize gets 503 with a JSON-RPC error, and a freed slot is reused', async () => {
    const capped = await startMcpHarness({
      db: h.db,
      config: { mcp: { max_sessions: 2, session_idle_seconds: 600 } },
    });
    try {
      const a = await capped.connect();
      await capped.connect();
      expect(capped.surface.sessionCount()).toBe(2);
      const refused = await rawRequest(capped.port, {
        headers: { ...MCP_HEADERS, authorization: `Bearer ${capped.token}` },
        body: JSON.stringify(INITIALIZE),
      });
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toMatchObject({
        jsonrpc: '2.0',
        error: { code: -32000, message: expect.stringMatching(/too many MCP sessions \(limit 2\)/) },
      });
      await expect(capped.connect()).rejects.toThrow();
      await capped.disconnect(a);
      expect(capped.surface.sessionCount()).toBe(1);
      const c = await capped.connect();
      expect((await c.listTools()).tools).toHaveLength(4);
    } finally {
      await capped.close();
    }
  });

  it('expires a session whose only activity is an open GET stream, closing the stream cleanly, while a session in use lives on', async () => {
    const idle = await startMcpHarness({ db: h.db, config: { mcp: { max_sessions: 10 } }, sessionIdleSeconds: 1 });
    try {
      const streaming = await openSessionOn(idle);
      const busy = await openSessionOn(idle);
      const stream = await openRawStream(idle.port, {
        ...sessionHeaders(idle, streaming),
        accept: 'text/event-stream',
      });
      expect(stream.status).toBe(200);
      // The busy session sends a request every 300 ms for 4 s: it is never idle for a whole second.
      const started = performance.now();
      const pinging = (async () => {
        for (let id = 1; performance.now() - started < 4_000; id += 1) {
          expect((await ping(idle, busy, id)).status).toBe(200);
          await sleep(300);
        }
      })();
      // Idle for 1 s, found by a sweep within another second; generous for a loaded machine.
      const end = await Promise.race([stream.ended, sleep(8_000).then(() => null)]);
      expect(end, 'the GET stream of the idle session was never closed').not.toBeNull();
      expect(end?.complete, 'closed with a clean end of the response').toBe(true);
      await pinging;
      expect(idle.surface.sessionCount()).toBe(1);
      expect((await ping(idle, streaming, 99)).status).toBe(404);
      expect((await ping(idle, busy, 100)).status).toBe(200);
    } finally {
      await idle.close();
    }
  });

  it('One-shot sessions never lock a token out: 30 sessions in a row with one token, none ended by DELETE, all succeed, the least recently used idle one making room', async () => {
    const oneShot = await startMcpHarness({ db: h.db });
    try {
      const perCaller = oneShot.config.mcp.maxSessionsPerCaller;
      const opened: string[] = [];
      for (let i = 0; i < 30; i += 1) {
        // What the Inspector CLI or a script does: connect, call once, exit without DELETE.
        const client = await oneShot.connect();
        const page = await client.callTool({ name: 'list_providers', arguments: {} });
        expect(page.isError, `session ${i + 1}`).toBeUndefined();
        const transport = client.transport;
        if (transport instanceof StreamableHTTPClientTransport) opened.push(transport.sessionId ?? '');
        await client.close();
      }
      expect(oneShot.surface.sessionCount()).toBe(perCaller);
      // The oldest were evicted (404: start a new session), the newest kept.
      expect((await ping(oneShot, opened[0] ?? '', 1)).status).toBe(404);
      expect((await ping(oneShot, opened[29] ?? '', 2)).status).toBe(200);
    } finally {
      await oneShot.close();
    }
  });

  it('Active sessions are never evicted: with 10 streams held the 11th initialize gets 429 with the envelope and Retry-After, other tokens still get in, and a stream that ends frees its session', async () => {
    const capped = await startMcpHarness({ db: h.db, config: { mcp: { max_sessions: 20 } } });
    try {
      const perCaller = capped.config.mcp.maxSessionsPerCaller;
      expect(perCaller).toBe(10);
      const streams: RawStream[] = [];
      const ids: string[] = [];
      for (let i = 0; i < perCaller; i += 1) {
        const id = await openSessionWith(capped, capped.token);
        ids.push(id);
        const stream = await openRawStream(capped.port, { ...sessionHeaders(capped, id), accept: 'text/event-stream' });
        expect(stream.status).toBe(200);
        streams.push(stream);
      }
      const init = (token: string): Promise<RawResponse> =>
        rawRequest(capped.port, {
          headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
          body: JSON.stringify(INITIALIZE),
        });
      const refused = await init(capped.token);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      const envelope: unknown = JSON.parse(refused.body);
      expect(validateErrorEnvelope(envelope)).toBe(true);
      expect(envelope).toMatchObject({
        error: { code: 'rate_limited', message: expect.stringMatching(/10 MCP sessions .* GET stream open/) },
      });
      expect(capped.surface.sessionCount()).toBe(perCaller);
      // One caller could not take the other slots.
      const { token: other } = await capped.tokens.create('other-caller');
      expect((await init(other)).status).toBe(200);
      // Once a stream ends, its session is idle: the next initialize evicts it, and only it.
      streams[3]?.close();
      // The server hears the stream end shortly after the client drops it.
      let admitted = await init(capped.token);
      for (let attempt = 0; admitted.status === 429 && attempt < 20; attempt += 1) {
        await sleep(50);
        admitted = await init(capped.token);
      }
      expect(admitted.status).toBe(200);
      expect((await ping(capped, ids[3] ?? '', 1)).status).toBe(404);
      for (const [i, id] of ids.entries())
        if (i !== 3) expect((await ping(capped, id, 2)).status, `session ${i}`).toBe(200);
      for (const stream of streams) stream.close();
    } finally {
      await capped.close();
    }
  });

  it("The overall cap evicts the least recently used idle session of any token, never another token's active one", async () => {
    const full = await startMcpHarness({ db: h.db, config: { mcp: { max_sessions: 3 } } });
    try {
      const { token: other } = await full.tokens.create('second-caller');
      const { token: third } = await full.tokens.create('third-caller');
      const idle = await openSessionWith(full, full.token);
      const listening = await openSessionWith(full, full.token);
      const theirs = await openSessionWith(full, other);
      const held = [
        await openRawStream(full.port, { ...sessionHeaders(full, listening), accept: 'text/event-stream' }),
        await openRawStream(full.port, {
          ...sessionHeaders(full, theirs),
          authorization: `Bearer ${other}`,
          accept: 'text/event-stream',
        }),
      ];
      // A third token at the overall cap: the one idle session (another token's) makes room.
      const newcomer = await openSessionWith(full, third);
      expect(full.surface.sessionCount()).toBe(3);
      expect((await ping(full, idle, 1)).status).toBe(404);
      held.push(
        await openRawStream(full.port, {
          ...sessionHeaders(full, newcomer),
          authorization: `Bearer ${third}`,
          accept: 'text/event-stream',
        }),
      );
      // Every session active: 503, and nobody's session was closed for it.
      const refused = await rawRequest(full.port, {
        headers: { ...MCP_HEADERS, authorization: `Bearer ${full.token}` },
        body: JSON.stringify(INITIALIZE),
      });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(full.surface.sessionCount()).toBe(3);
      for (const stream of held) stream.close();
    } finally {
      await full.close();
    }
  });

  it("binds a session to its token's identity, not its name: a new token under a revoked token's name gets 404", async () => {
    const { token: first } = await h.tokens.create('reused-name');
    const id = await openSessionWith(h, first);
    await h.tokens.revoke('reused-name');
    const { token: second } = await h.tokens.create('reused-name');
    const response = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...sessionHeaders(h, id), authorization: `Bearer ${second}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
    });
    expect(response.status).toBe(404);
  });

  it('ends the sessions of a revoked token within 5 s: its GET stream closes, its subscription stops, and the session is gone', async () => {
    const { token: doomed } = await h.tokens.create('doomed');
    const id = await openSessionWith(h, doomed);
    const headers = { ...sessionHeaders(h, id), authorization: `Bearer ${doomed}` };
    const subscribed = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'resources/subscribe',
        params: { uri: 'switchboard://events/recent' },
      }),
    });
    expect(subscribed.status).toBe(200);
    const stream = await openRawStream(h.port, { ...headers, accept: 'text/event-stream' });
    expect(stream.status).toBe(200);
    // The subscription works before the revocation.
    expect((await deliverOpen(h.origin, '{"type":"before"}')).status).toBe(200);
    await waitUntil(() => stream.text().includes('notifications/resources/updated'), 5_000);

    const revokedAt = performance.now();
    await h.tokens.revoke('doomed');
    const end = await Promise.race([stream.ended, sleep(8_000).then(() => null)]);
    expect(end, 'the GET stream of the revoked token was never closed').not.toBeNull();
    expect((end?.atMs ?? Infinity) - revokedAt).toBeLessThan(5_000);
    expect(end?.complete).toBe(true);

    const received = stream.text();
    expect((await deliverOpen(h.origin, '{"type":"after"}')).status).toBe(200);
    await sleep(500);
    expect(stream.text()).toBe(received);
    // The revoked token is refused outright; the session id is unknown to anyone else.
    const again = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }),
    });
    expect(again.status).toBe(401);
    const { token: successor } = await h.tokens.create('doomed');
    const stale = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...headers, authorization: `Bearer ${successor}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }),
    });
    expect(stale.status).toBe(404);
  });

  it('closeAll ends every session and refuses new ones', async () => {
    const closing = await startMcpHarness({ db: h.db });
    try {
      await closing.connect();
      await closing.connect();
      expect(closing.surface.sessionCount()).toBe(2);
      await closing.surface.closeAll();
      expect(closing.surface.sessionCount()).toBe(0);
      const refused = await rawRequest(closing.port, {
        headers: { ...MCP_HEADERS, authorization: `Bearer ${closing.token}` },
        body: JSON.stringify(INITIALIZE),
      });
      expect(refused.status).toBe(503);
    } finally {
      await closing.close();
    }
  });
});

async function openSessionOn(target: Harness): Promise<string> {
  return openSessionWith(target, target.token);
}

/** initialize, then notifications/initialized, as a client does; the session id. */
async function openSessionWith(target: Harness, token: string): Promise<string> {
  const response = await rawRequest(target.port, {
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify(INITIALIZE),
  });
  expect(response.status).toBe(200);
  const id = String(response.headers['mcp-session-id']);
  const initialized = await rawRequest(target.port, {
    headers: { ...MCP_HEADERS, ...sessionHeaders(target, id), authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(initialized.status).toBe(202);
  return id;
}

function sessionHeaders(target: Harness, id: string): Record<string, string> {
  return { authorization: `Bearer ${target.token}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
}

function ping(target: Harness, sessionId: string, id: number): Promise<RawResponse> {
  return rawRequest(target.port, {
    headers: { ...MCP_HEADERS, ...sessionHeaders(target, sessionId) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }),
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}
