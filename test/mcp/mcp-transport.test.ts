import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { INITIALIZE, MCP_HEADERS, rawRequest, type RawResponse } from './support/raw-http.ts';
import { createDatabasePool } from '../../src/store/database.ts';
import { startControlledProxy } from '../support/tcp-proxy.ts';
import { startSwitchboard, type Harness } from './support/switchboard-harness.ts';

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
  h = await startSwitchboard({
    config: {
      mcp: { max_sessions: 50, session_idle_seconds: 600 },
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

    const strict = await startSwitchboard({
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
      expect((await strictInit()).status).toBe(200);
      record(await strictInit(), 503);
      record(await strictInit(), 429);
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
    expect(noToken.headers['www-authenticate']).toBe('Bearer realm="switchboard"');
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
    const down = await startSwitchboard({ db: { ...h.db, pool } });
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
    expect(await health.json()).toEqual({ status: 'ok' });
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
    const capped = await startSwitchboard({
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

  it('expires idle sessions, but not one holding an open stream', async () => {
    const idle = await startSwitchboard({ db: h.db, config: { mcp: { max_sessions: 10 } }, sessionIdleSeconds: 1 });
    try {
      const listening = await idle.connect();
      const quiet = await openSessionOn(idle);
      expect(idle.surface.sessionCount()).toBe(2);
      // Idle for 1 s, found by a sweep within another second; generous for a loaded machine.
      const deadline = performance.now() + 8_000;
      while (idle.surface.sessionCount() > 1 && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // The SDK client keeps its GET stream open, so its session lives; the raw one expired.
      expect(idle.surface.sessionCount()).toBe(1);
      const gone = await rawRequest(idle.port, {
        headers: {
          ...MCP_HEADERS,
          authorization: `Bearer ${idle.token}`,
          'mcp-session-id': quiet,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
      });
      expect(gone.status).toBe(404);
      expect(await listening.ping()).toEqual({});
    } finally {
      await idle.close();
    }
  });

  it('closeAll ends every session and refuses new ones', async () => {
    const closing = await startSwitchboard({ db: h.db });
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
  const response = await rawRequest(target.port, {
    headers: { ...MCP_HEADERS, authorization: `Bearer ${target.token}` },
    body: JSON.stringify(INITIALIZE),
  });
  expect(response.status).toBe(200);
  return String(response.headers['mcp-session-id']);
}
