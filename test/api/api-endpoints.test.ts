import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type {
  ApiEventList,
  EventDetail,
  ListProvidersOutput,
  ReplayHistory,
  ReplayResult,
} from '../../generated/types.ts';
import { ENV_TOKEN_CALLER } from '../../src/auth/token-service.ts';
import { API_SECURITY_HEADERS } from '../../src/http/security-headers.ts';
import { startApiTestServer, type ApiTestServer } from './api-test-server.ts';
import { answerWith, startConsumer, type Consumer } from '../support/local-server.ts';
import {
  call,
  getJson,
  sendBadlySignedGithub,
  sendOpen,
  sendSignedGithub,
  sendToken,
  type RawResponse,
} from './http-helpers.ts';
import { SUMMARY_FIELDS } from '../support/events.ts';

let server: ApiTestServer;
let consumer: Consumer;
let githubId: string;
let githubBody: Buffer;
let binaryId: string;
const binary = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a, 0x0d, 0x7f, 0xc3, 0x28, 0x00]);

beforeAll(async () => {
  consumer = await startConsumer('127.0.0.1', answerWith(202));
  server = await startApiTestServer({ defaultTarget: consumer.url() });
  ({ id: githubId, body: githubBody } = await sendSignedGithub(server));
  binaryId = await sendOpen(server, binary, 'application/octet-stream');
});
afterAll(async () => {
  await server?.close();
  await consumer?.close();
});

const UNKNOWN_ID = '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e';
const API_PATHS: readonly [method: string, path: string][] = [
  ['GET', '/api/events'],
  ['GET', '/api/events/:id'],
  ['GET', '/api/events/:id/raw'],
  ['POST', '/api/events/:id/replay'],
  ['GET', '/api/events/:id/replays'],
  ['GET', '/api/providers'],
  ['GET', '/api/config'],
  ['GET', '/api/stream'],
  ['GET', '/api/no-such-route'],
  ['GET', '/api'],
];

function expectApiHeaders(res: RawResponse): void {
  for (const [name, value] of Object.entries(API_SECURITY_HEADERS)) {
    expect(res.headers[name.toLowerCase()], `${name} on ${res.status}`).toBe(value);
  }
  expect(res.headers['cache-control']).toBe('no-store');
}

function expectEnvelope(res: RawResponse, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toMatchObject({ error: { code, message: expect.any(String) } });
}

describe('authentication on /api', () => {
  it.each(API_PATHS)('%s %s without a token answers 401 with WWW-Authenticate', async (method, path) => {
    const res = await call(server, path.replace(':id', githubId), { method, token: null });
    expectEnvelope(res, 401, 'unauthenticated');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="switchboard"/);
    expectApiHeaders(res);
  });

  it('refuses an unknown token and a cookie-only request', async () => {
    const bad = await call(server, '/api/events', { token: 'sbt_not-a-real-token' });
    expectEnvelope(bad, 401, 'unauthenticated');
    expect(bad.headers['www-authenticate']).toMatch(/invalid_token/);
    const cookie = await call(server, '/api/events', {
      token: null,
      headers: { cookie: `token=${server.token}; authorization=Bearer ${server.token}` },
    });
    expect(cookie.status).toBe(401);
    const query = await call(server, `/api/events?access_token=${server.token}`, { token: null });
    expect(query.status).toBe(401);
  });

  it('refuses a foreign Host or Origin with 403 before authentication', async () => {
    const host = await call(server, '/api/events', { headers: { host: 'evil.example' } });
    expectEnvelope(host, 403, 'forbidden');
    expectApiHeaders(host);
    const origin = await call(server, '/api/events', { headers: { origin: 'http://evil.example' } });
    expect(origin.status).toBe(403);
    const same = await call(server, '/api/events', { headers: { origin: `http://127.0.0.1:${server.port}` } });
    expect(same.status).toBe(200);
  });
});

describe('GET /api/events', () => {
  it('lists summaries newest first with the list_webhook_events filters and cursor', async () => {
    const tokenId = await sendToken(server, { type: 'build.finished', ok: true, branch: 'main' });
    const all = await getJson<ApiEventList>(server, '/api/events');
    expect(all.events[0]?.id).toBe(tokenId);
    expect(all.events.map((e) => e.id)).toEqual(expect.arrayContaining([githubId, binaryId, tokenId]));
    // MCP's summary fields, plus the one-line summary of the payload (absent when there is none).
    expect(Object.keys(all.events[0] ?? {}).sort()).toEqual(SUMMARY_FIELDS);
    expect(all.events[0]?.summary).toBe('branch: main');
    expect(all.events.find((e) => e.id === githubId)?.summary).toBe('Codertocat/Hello-World · master · Initial commit');
    expect(all.events.find((e) => e.id === binaryId)).not.toHaveProperty('summary');

    const gh = await getJson<ApiEventList>(server, '/api/events?provider=github&event_type=push');
    expect(gh.events.map((e) => e.id)).toEqual([githubId]);

    const page1 = await getJson<ApiEventList>(server, '/api/events?limit=1');
    expect(page1.events).toHaveLength(1);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const page2 = await getJson<ApiEventList>(
      server,
      `/api/events?limit=1&cursor=${encodeURIComponent(page1.next_cursor ?? '')}`,
    );
    expect(page2.events[0]?.id).not.toBe(page1.events[0]?.id);

    const since = await getJson<ApiEventList>(server, `/api/events?since=${binaryId}`);
    expect(since.events.map((e) => e.id)).toEqual([tokenId]);
  });

  it.each([
    ['limit=0', /limit/],
    ['limit=201', /limit/],
    ['limit=abc', /limit/],
    ['cursor=not-a-cursor', /cursor/],
    ['provider=', /provider/],
    ['verified=yes', /verified/],
    ['from=yesterday', /from/],
    ['from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z', /from/],
    ['match=[1,2]', /match/],
    ['match=%7Bnot-json', /match/],
    ['q=', /q/],
    ['limit=1&limit=2', /limit/],
    ['colour=red', /unknown query parameter colour/],
  ])('rejects %s as invalid_argument', async (query, message) => {
    const res = await call(server, `/api/events?${query}`);
    expectEnvelope(res, 400, 'invalid_argument');
    expect((res.json() as { error: { message: string } }).error.message).toMatch(message);
    expectApiHeaders(res);
  });
});

describe('GET /api/events: until, order, bound cursors, unknown providers', () => {
  const ids: string[] = [];
  const page = (query: string): Promise<ApiEventList> =>
    getJson<ApiEventList>(server, `/api/events?event_type=tail&${query}`);
  const cursorParam = (cursor: string | undefined): string => `cursor=${encodeURIComponent(cursor ?? '')}`;

  beforeAll(async () => {
    for (let i = 0; i < 7; i += 1) ids.push(await sendToken(server, { type: `tail.${i}` }));
  });

  it('catches up as switchboard listen will: since=<last id>&order=oldest_first, paged by cursor, new arrivals last', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let arrived: string | undefined;
    do {
      const next = await page(`since=${ids[1]}&order=oldest_first&limit=2${cursor ? `&${cursorParam(cursor)}` : ''}`);
      seen.push(...next.events.map((e) => e.id));
      // An event arriving while the listener pages is picked up at the end, not skipped.
      arrived ??= await sendToken(server, { type: 'tail.7' });
      cursor = next.next_cursor;
    } while (cursor !== undefined);
    expect(seen).toEqual([...ids.slice(2), arrived]);
    // The next catch-up starts after the last event seen and finds nothing new.
    expect((await page(`since=${arrived}&order=oldest_first`)).events).toEqual([]);
    ids.push(arrived);
  });

  it('takes until as an inclusive upper bound (event id or time) and order in both directions', async () => {
    const upTo = await page(`until=${ids[3]}`);
    expect(upTo.events.map((e) => e.id)).toEqual(ids.slice(0, 4).reverse());
    const detail = await getJson<EventDetail>(server, `/api/events/${ids[3]}`);
    const byTime = await page(`until=${encodeURIComponent(detail.received_at)}&order=oldest_first`);
    expect(byTime.events.map((e) => e.id)).toEqual(ids.slice(0, 4));
    const window = await page(`since=${ids[0]}&until=${ids[2]}&order=oldest_first`);
    expect(window.events.map((e) => e.id)).toEqual(ids.slice(1, 3));
  });

  it.each([
    ['order=sideways', /order: must be one of "newest_first", "oldest_first"/],
    ['until=tomorrow', /until must be an ISO-8601 time .* or an event id/],
    ['since=last%20week', /since must be an ISO-8601 time .* or an event id/],
    ['until=', /until/],
    ['order=oldest_first&order=newest_first', /order: give it once/],
  ])('rejects %s as invalid_argument', async (query, message) => {
    const res = await call(server, `/api/events?${query}`);
    expectEnvelope(res, 400, 'invalid_argument');
    expect((res.json() as { error: { message: string } }).error.message).toMatch(message);
  });

  it('refuses a cursor sent with other filters or the other order: it belongs to another query', async () => {
    const first = await page('order=oldest_first&limit=2');
    expect(first.next_cursor).toEqual(expect.any(String));
    for (const other of ['order=newest_first&', 'order=oldest_first&verified=true&', 'order=oldest_first&q=tail&']) {
      const res = await call(server, `/api/events?event_type=tail&${other}limit=2&${cursorParam(first.next_cursor)}`);
      expectEnvelope(res, 400, 'invalid_argument');
      expect((res.json() as { error: { message: string } }).error.message).toMatch(/belongs to another query/);
    }
    const res = await call(server, `/api/events?order=oldest_first&limit=2&${cursorParam(first.next_cursor)}`);
    expectEnvelope(res, 400, 'invalid_argument');
    // The same query with another page size goes on where the first page ended.
    const second = await page(`order=oldest_first&limit=3&${cursorParam(first.next_cursor)}`);
    expect(second.events.map((e) => e.id)).toEqual(ids.slice(2, 5));
  });

  it('answers not_found for a provider nobody configured, naming the configured ones', async () => {
    const res = await call(server, '/api/events?provider=gitlab');
    expectEnvelope(res, 404, 'not_found');
    expect((res.json() as { error: { message: string } }).error.message).toBe(
      'no provider named "gitlab"; configured providers: github, ci, hooks, orders',
    );
    // A configured provider with nothing stored yet is an empty page, not an error.
    expect((await getJson<ApiEventList>(server, '/api/events?provider=orders')).events).toEqual([]);
  });
});

describe('GET /api/events/:id and /raw', () => {
  it('returns the full EventDetail with trust metadata', async () => {
    const detail = await getJson<EventDetail>(server, `/api/events/${githubId}`);
    expect(detail).toMatchObject({
      id: githubId,
      provider: 'github',
      trust_mode: 'signed',
      verified: true,
      content_type: 'application/json',
    });
    expect(detail.verify_detail).toMatch(/valid/);
    expect(detail.payload).toEqual({ encoding: 'utf8', data: githubBody.toString('utf8') });
    expect(detail.headers['x-hub-signature-256']).toBe('[redacted]');
    expect(detail.summary).toBe('Codertocat/Hello-World · master · Initial commit');
    expect(detail.request).toEqual({ method: 'POST', path: '/hooks/github', query: '', response_status: 200 });
  });

  it('serves the exact stored bytes as an attachment that cannot render', async () => {
    const json = await call(server, `/api/events/${githubId}/raw`);
    expect(json.status).toBe(200);
    expect(json.bytes.equals(githubBody)).toBe(true);
    expect(json.headers['content-type']).toBe('application/json');
    expect(json.headers['content-disposition']).toBe(`attachment; filename="${githubId}.json"`);
    expect(json.headers['x-content-type-options']).toBe('nosniff');
    expect(json.headers['content-security-policy']).toMatch(/sandbox/);

    const bin = await call(server, `/api/events/${binaryId}/raw`);
    expect(bin.bytes.equals(binary)).toBe(true);
    expect(bin.headers['content-length']).toBe(String(binary.length));
    expect(bin.headers['content-type']).toBe('application/octet-stream');
    const detail = await getJson<EventDetail>(server, `/api/events/${binaryId}`);
    expect(detail.payload.encoding).toBe('base64');
    expect(Buffer.from(detail.payload.data, 'base64').equals(binary)).toBe(true);
  });

  it('never lets stored HTML render in the UI origin', async () => {
    const html = '<!doctype html><script>alert(1)</script>';
    const id = await sendOpen(server, html, 'text/html');
    const res = await call(server, `/api/events/${id}/raw`);
    expect(res.body).toBe(html);
    expect(res.headers['content-type']).toBe('text/html');
    expect(res.headers['content-disposition']).toMatch(/^attachment;/);
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'; sandbox");
  });

  it('answers not_found for an unknown id and invalid_argument for a malformed one', async () => {
    for (const suffix of ['', '/raw', '/replays']) {
      expectEnvelope(await call(server, `/api/events/${UNKNOWN_ID}${suffix}`), 404, 'not_found');
      expectEnvelope(await call(server, `/api/events/not-an-id${suffix}`), 400, 'invalid_argument');
    }
    expectEnvelope(await call(server, `/api/events/${UNKNOWN_ID}/replay`, { method: 'POST' }), 404, 'not_found');
  });
});

describe('replay over /api', () => {
  it('re-sends to the default target and records the attempt in the history', async () => {
    const before = consumer.requests.length;
    const res = await call(server, `/api/events/${githubId}/replay`, { method: 'POST' });
    expect(res.status).toBe(200);
    const result = res.json() as ReplayResult;
    expect(result).toMatchObject({ id: githubId, target_url: consumer.url(), delivered: true, response_status: 202 });
    expect(consumer.requests).toHaveLength(before + 1);
    expect(consumer.requests.at(-1)?.body.equals(githubBody)).toBe(true);

    const history = await getJson<ReplayHistory>(server, `/api/events/${githubId}/replays`);
    expect(history.attempts[0]).toMatchObject({
      event_id: githubId,
      caller: 'tester',
      delivered: true,
      response_status: 202,
    });
  });

  it('takes target_url from a JSON body', async () => {
    const other = await startConsumer('127.0.0.1', answerWith(500));
    try {
      const res = await call(server, `/api/events/${binaryId}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ target_url: other.url() }),
      });
      expect(res.json()).toMatchObject({ target_url: other.url(), delivered: true, response_status: 500 });
      expect(other.requests[0]?.body.equals(binary)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('maps refusals and transport failures to their codes', async () => {
    const post = (
      body: string,
      headers: Record<string, string> = { 'content-type': 'application/json' },
    ): Promise<RawResponse> => call(server, `/api/events/${githubId}/replay`, { method: 'POST', headers, body });
    expectEnvelope(await post(JSON.stringify({ target_url: 'file:///etc/passwd' })), 400, 'invalid_argument');
    expectEnvelope(
      await post(JSON.stringify({ target_url: 'http://169.254.169.254/latest' })),
      400,
      'invalid_argument',
    );
    expectEnvelope(await post(JSON.stringify({ target: 'x' })), 400, 'invalid_argument');
    expectEnvelope(await post('{'), 400, 'invalid_argument');
    expectEnvelope(await post('[]'), 400, 'invalid_argument');
    expectEnvelope(
      await post('target_url=http://127.0.0.1:1/', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      'invalid_argument',
    );
    expectEnvelope(await post(JSON.stringify({ target_url: 'x'.repeat(20_000) })), 413, 'payload_too_large');
    const refused = await post(JSON.stringify({ target_url: 'http://127.0.0.1:1/hook' }));
    expectEnvelope(refused, 502, 'replay_failed');
    expectApiHeaders(refused);
  });

  it('refuses to re-sign a badly signed delivery, sends it unsigned on request, and the history says unsigned', async () => {
    const id = await sendBadlySignedGithub(server);
    const post = (body?: unknown): Promise<RawResponse> =>
      call(server, `/api/events/${id}/replay`, {
        method: 'POST',
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
    const before = consumer.requests.length;
    const refused = await post();
    expectEnvelope(refused, 400, 'invalid_argument');
    expect((refused.json() as { error: { message: string } }).error.message).toMatch(
      /failed signature verification on arrival.*`unsigned: true`/,
    );
    expectEnvelope(await post({ unsigned: 'yes' }), 400, 'invalid_argument');
    expect(consumer.requests).toHaveLength(before);

    const res = await post({ unsigned: true });
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ id, target_url: consumer.url(), delivered: true });
    expect(consumer.requests).toHaveLength(before + 1);
    expect(consumer.requests.at(-1)?.headers['x-hub-signature-256']).toBeUndefined();

    const history = await getJson<ReplayHistory>(server, `/api/events/${id}/replays`);
    expect(history.attempts.map((a) => ({ unsigned: a.unsigned, error_code: a.error_code }))).toEqual([
      { unsigned: true, error_code: null },
      { unsigned: false, error_code: 'invalid_argument' },
    ]);
  });

  it('answers rate_limited with Retry-After once the replay bucket is empty', async () => {
    const limited = await startApiTestServer({
      defaultTarget: consumer.url(),
      replayLimit: { capacity: 1, refillPerSecond: 0.01 },
    });
    try {
      const { id } = await sendSignedGithub(limited);
      expect((await call(limited, `/api/events/${id}/replay`, { method: 'POST' })).status).toBe(200);
      const res = await call(limited, `/api/events/${id}/replay`, { method: 'POST' });
      expectEnvelope(res, 429, 'rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect((res.json() as { error: { retry_after: number } }).error.retry_after).toBe(
        Number(res.headers['retry-after']),
      );
    } finally {
      await limited.close();
    }
  });
});

describe('providers, config and reads', () => {
  it('lists providers without secrets', async () => {
    const res = await call(server, '/api/providers');
    const body = res.json() as ListProvidersOutput;
    expect(body.providers.map((p) => p.name).sort()).toEqual(['ci', 'github', 'hooks', 'orders']);
    expect(body.providers.find((p) => p.name === 'github')).toMatchObject({
      trust_mode: 'signed',
      secret_status: 'configured',
      route: '/hooks/github',
    });
    expect(body.providers.find((p) => p.name === 'orders')).toMatchObject({
      family: 'queue',
      channel: 'orders',
      connection: 'connecting',
    });
    expect(res.body).not.toMatch(/gh-test-secret|ci-shared-token/);
  });

  it('exposes the replay default target for the UI', async () => {
    expect(await getJson(server, '/api/config')).toEqual({
      replay: { default_target: consumer.url() },
      server_token_caller: ENV_TOKEN_CALLER,
      cli_command: 'switchboard',
    });
  });

  it('rate-limits reads per caller with 429 and Retry-After', async () => {
    const limited = await startApiTestServer({ readLimit: { capacity: 3, refillPerSecond: 0.01 } });
    try {
      for (let i = 0; i < 3; i++) expect((await call(limited, '/api/events')).status).toBe(200);
      const res = await call(limited, '/api/providers');
      expectEnvelope(res, 429, 'rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expectApiHeaders(res);
      // Another caller has a bucket of its own.
      const other = await limited.createToken('other');
      expect((await call(limited, '/api/events', { token: other })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('spends the write bucket on the routes that change something, not the read one', async () => {
    const limited = await startApiTestServer({
      readLimit: { capacity: 1, refillPerSecond: 0.01 },
      writeLimit: { capacity: 4, refillPerSecond: 0.01 },
    });
    try {
      // No forward rule here: each change is looked for, answered 404, and still spends its token.
      const changes = [
        `/api/deliveries/${randomUUID()}/retry`,
        '/api/forwards/nightly/retry-dead',
        '/api/forwards/nightly/pause',
        '/api/forwards/nightly/resume',
      ];
      for (const path of changes) expectEnvelope(await call(limited, path, { method: 'POST' }), 404, 'not_found');
      // Four changes left the one read token alone...
      expect((await call(limited, '/api/events')).status).toBe(200);
      // ...and the fifth change finds the write bucket empty, whatever the read bucket holds.
      const refused = await call(limited, '/api/forwards/nightly/pause', { method: 'POST' });
      expectEnvelope(refused, 429, 'rate_limited');
      expect((refused.json() as { error: { message: string } }).error.message).toMatch(/^write rate limit reached/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expectEnvelope(await call(limited, '/api/providers'), 429, 'rate_limited');
    } finally {
      await limited.close();
    }
  });

  it('answers unknown routes and methods with the envelope', async () => {
    expectEnvelope(await call(server, '/api/nothing'), 404, 'not_found');
    const res = await call(server, '/api/events', { method: 'DELETE' });
    expectEnvelope(res, 405, 'method_not_allowed');
    expect(res.headers['allow']).toMatch(/GET/);
  });

  it('every /api response, errors included, carries the API security headers and no-store', async () => {
    const responses = await Promise.all([
      call(server, '/api/events'),
      call(server, `/api/events/${githubId}`),
      call(server, `/api/events/${githubId}/raw`),
      call(server, `/api/events/${githubId}/replays`),
      call(server, '/api/providers'),
      call(server, '/api/config'),
      call(server, '/api/events?limit=0'),
      call(server, `/api/events/${UNKNOWN_ID}`),
      call(server, '/api/events', { token: null }),
      call(server, '/api/events', { headers: { host: 'evil.example' } }),
      call(server, '/api/events', { method: 'PUT' }),
    ]);
    for (const res of responses) {
      const { 'Content-Security-Policy': csp, ...rest } = API_SECURITY_HEADERS;
      for (const [name, value] of Object.entries(rest)) expect(res.headers[name.toLowerCase()]).toBe(value);
      expect(res.headers['content-security-policy']).toMatch(new RegExp(`^${(csp ?? '').split(';')[0] ?? ''}`));
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });
});

describe('trust is reported, never upgraded', () => {
  it('a badly signed delivery is listed as verified false with the reason', async () => {
    const id = await sendBadlySignedGithub(server);
    const detail = await getJson<EventDetail>(server, `/api/events/${id}`);
    expect(detail).toMatchObject({ trust_mode: 'signed', verified: false });
    const verifiedOnly = await getJson<ApiEventList>(server, '/api/events?verified=true');
    expect(verifiedOnly.events.every((e) => e.verified && e.trust_mode === 'signed')).toBe(true);
    expect(verifiedOnly.events.map((e) => e.id)).not.toContain(id);
  });
});

describe('when PostgreSQL goes away', () => {
  it('answers 503 with Retry-After and the envelope, not 500', async () => {
    const fragile = await startApiTestServer({ viaProxy: true });
    try {
      const { id } = await sendSignedGithub(fragile);
      expect((await call(fragile, `/api/events/${id}`)).status).toBe(200);
      await fragile.takeDatabaseDown();
      // The token service caches a valid token briefly, so these fail in the handlers, as they
      // would for any caller authenticated just before the outage; a resume needs the backlog.
      const paths = [
        '/api/events',
        `/api/events/${id}`,
        `/api/events/${id}/raw`,
        `/api/events/${id}/replays`,
        '/api/stream',
      ];
      for (const path of paths) {
        const res = await call(fragile, path, path === '/api/stream' ? { headers: { 'last-event-id': id } } : {});
        expect(res.status, path).toBe(503);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.json()).toEqual({
          error: { code: 'unavailable', message: 'database unavailable; try again shortly' },
        });
        expectApiHeaders(res);
      }
    } finally {
      await fragile.close();
    }
  });
});
