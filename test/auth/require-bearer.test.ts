import type { Middleware } from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { callerOf } from '../../src/auth/require-bearer.ts';
import { DEFAULT_TOKEN_CACHE_TTL_MS } from '../../src/auth/token-service.ts';
import { INITIALIZE, MCP_HEADERS, rawRequest, type RawResponse } from '../mcp/support/raw-http.ts';
import { startMcpHarness, type Harness } from '../mcp/support/switchboard-harness.ts';

const ENV_TOKEN = 'env-token-for-tests-0123456789abcdef';

/** /whoami behind the same host check and requireBearer as /mcp: answers the caller's name. */
const whoami = ({ authenticate, checkHost }: { authenticate: Middleware; checkHost: Middleware }): Middleware[] => [
  async (ctx, next) => {
    if (ctx.path !== '/whoami') {
      await next();
      return;
    }
    await checkHost(ctx, async () => {
      await authenticate(ctx, async () => {
        ctx.body = { caller: callerOf(ctx) };
      });
    });
  },
];

let h: Harness;

beforeAll(async () => {
  h = await startMcpHarness({ envToken: ENV_TOKEN, extraSurfaces: whoami });
});
afterAll(() => h?.close());

function expectRefused(response: RawResponse, what: string): void {
  expect(response.status, what).toBe(401);
  expect(response.headers['www-authenticate'], what).toMatch(/^Bearer( |$)/);
  expect(response.headers['mcp-session-id'], what).toBeUndefined();
  const body: unknown = JSON.parse(response.body);
  expect(validateErrorEnvelope(body), what).toBe(true);
  expect(response.body, what).not.toContain('event');
}

describe('requireBearer on /mcp', () => {
  it('Request without a bearer token is rejected: no token, an unknown or revoked token, or only a cookie get 401 with WWW-Authenticate Bearer', async () => {
    const { token: revoked } = await h.tokens.create('soon-revoked');
    await h.tokens.revoke('soon-revoked');
    const sessionsBefore = h.surface.sessionCount();
    const attempts: Array<[string, Record<string, string>]> = [
      ['no credentials', {}],
      ['unknown token', { authorization: 'Bearer sbt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
      ['garbage token', { authorization: 'Bearer not-a-token' }],
      ['revoked token', { authorization: `Bearer ${revoked}` }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['basic scheme with a valid token', { authorization: `Basic ${Buffer.from(`x:${h.token}`).toString('base64')}` }],
      ['token scheme', { authorization: `Token ${h.token}` }],
      ['two tokens', { authorization: `Bearer ${h.token} ${h.token}` }],
      ['cookie only', { cookie: `token=${h.token}; switchboard_token=${h.token}; authorization=Bearer%20${h.token}` }],
      [
        'cookie with a valid token beside a wrong bearer',
        { cookie: `token=${h.token}`, authorization: 'Bearer sbt_wrong' },
      ],
    ];
    for (const [what, headers] of attempts) {
      expectRefused(
        await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(INITIALIZE) }),
        what,
      );
    }
    expectRefused(
      await rawRequest(h.port, {
        path: `/mcp?token=${h.token}&access_token=${h.token}`,
        headers: MCP_HEADERS,
        body: JSON.stringify(INITIALIZE),
      }),
      'token in the query',
    );
    expectRefused(
      await rawRequest(h.port, { method: 'GET', headers: { accept: 'text/event-stream', cookie: `token=${h.token}` } }),
      'GET',
    );
    expectRefused(await rawRequest(h.port, { method: 'DELETE', headers: { 'mcp-session-id': 'x' } }), 'DELETE');
    expect(h.surface.sessionCount()).toBe(sessionsBefore);

    const accepted = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, authorization: `Bearer ${h.token}` },
      body: JSON.stringify(INITIALIZE),
    });
    expect(accepted.status).toBe(200);
    const lowerCaseScheme = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, authorization: `bearer ${h.token}` },
      body: JSON.stringify(INITIALIZE),
    });
    expect(lowerCaseScheme.status).toBe(200);
  });

  it('refuses a token revoked while its session is open, within the 5 s the server may trust it', async () => {
    const { token } = await h.tokens.create('revoked-later');
    const client = await h.connect(token);
    expect((await client.listTools()).tools).toHaveLength(4);
    await h.tokens.revoke('revoked-later');
    const revokedAt = performance.now();
    let refused = false;
    while (!refused && performance.now() - revokedAt < DEFAULT_TOKEN_CACHE_TTL_MS + 2_000) {
      refused = await client.listTools().then(
        () => false,
        (error: unknown) => /bearer token is not valid/.test(String(error)),
      );
      if (!refused) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(refused).toBe(true);
    expect(performance.now() - revokedAt).toBeLessThan(DEFAULT_TOKEN_CACHE_TTL_MS + 2_000);
  });

  it('accepts SWITCHBOARD_TOKEN as the caller "env" and a managed token as its name', async () => {
    const env = await fetch(`${h.origin}/whoami`, { headers: { authorization: `Bearer ${ENV_TOKEN}` } });
    expect(await env.json()).toEqual({ caller: 'env' });
    const managed = await fetch(`${h.origin}/whoami`, { headers: { authorization: `Bearer ${h.token}` } });
    expect(await managed.json()).toEqual({ caller: expect.stringMatching(/^agent-/) });
    const nearMiss = await fetch(`${h.origin}/whoami`, { headers: { authorization: `Bearer ${ENV_TOKEN}x` } });
    expect(nearMiss.status).toBe(401);
    const prefix = await fetch(`${h.origin}/whoami`, {
      headers: { authorization: `Bearer ${ENV_TOKEN.slice(0, -1)}` },
    });
    expect(prefix.status).toBe(401);
    const client = await h.connect(ENV_TOKEN);
    expect((await client.listTools()).tools).toHaveLength(4);
  });

  it('keeps /healthz public', async () => {
    const response = await fetch(`${h.origin}/healthz`);
    expect(response.status).toBe(200);
  });
});
