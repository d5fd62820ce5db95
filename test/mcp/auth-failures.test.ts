/**
 * What a client is told when its token is missing or wrong (issue 17): a 401 that says what to
 * send, and OAuth's endpoints answered in OAuth's own error format so clients that go looking for
 * an authorization server print the same instruction. Raw HTTP, and the official SDK client with
 * an OAuth provider, as Claude Code, mcp-remote and the MCP Inspector use it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { MCP_SECURITY_HEADERS } from '../../src/mcp/http-responses.ts';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';

const HINT = 'send Authorization: Bearer <token>; create one with switchboard token create';
const INVALID = 'the bearer token is not valid (unknown or revoked); create one with switchboard token create';
const NO_OAUTH =
  'switchboard does not use OAuth: send Authorization: Bearer <token> with a token it knows (if you sent one, it is unknown or revoked); create one with switchboard token create';

let h: Harness;
beforeAll(async () => {
  h = await startMcpHarness();
});
afterAll(() => h?.close());

const initialize = (headers: Record<string, string> = {}) =>
  rawRequest(h.port, { headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(INITIALIZE) });

describe('the 401', () => {
  it('Missing token is answered with what to send: Bearer realm and an error_description naming the header and switchboard token create, with no error attribute', async () => {
    const response = await initialize();
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe(`Bearer realm="switchboard", error_description="${HINT}"`);
    const body: unknown = JSON.parse(response.body);
    expect(validateErrorEnvelope(body)).toBe(true);
    expect(body).toEqual({ error: { code: 'unauthenticated', message: `authentication required: ${HINT}` } });
    // A scheme other than Bearer counts as no token at all.
    const basic = await initialize({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` });
    expect(basic.headers['www-authenticate']).toBe(`Bearer realm="switchboard", error_description="${HINT}"`);
  });

  it('Wrong token is answered invalid_token: the challenge adds error="invalid_token", and its error_description says the token is not valid', async () => {
    const { token: revoked } = await h.tokens.create('revoked-soon');
    await h.tokens.revoke('revoked-soon');
    for (const token of ['sbt_not-a-real-token', revoked]) {
      const response = await initialize({ authorization: `Bearer ${token}` });
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="switchboard", error="invalid_token", error_description="${INVALID}"`,
      );
      expect(JSON.parse(response.body)).toEqual({ error: { code: 'unauthenticated', message: INVALID } });
      expect(response.body).not.toContain(token);
    }
  });
});

describe('the command the hints name', () => {
  it('The hints name the command that runs where the server runs: npx @switchboard-dev/switchboard when the package is not installed', async () => {
    const npx = await startMcpHarness({ cliCommand: 'npx @switchboard-dev/switchboard' });
    try {
      const send = (headers: Record<string, string>, path = '/mcp') =>
        rawRequest(npx.port, { path, headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(INITIALIZE) });
      const missing = await send({});
      const wrong = await send({ authorization: 'Bearer sbt_not-a-real-token' });
      const register = await send({}, '/register');
      expect([missing.status, wrong.status, register.status]).toEqual([401, 401, 400]);
      for (const answer of [missing, wrong, register]) {
        expect(answer.body).toContain('create one with npx @switchboard-dev/switchboard token create');
        expect(answer.body).not.toContain('with switchboard token create');
      }
      expect(missing.headers['www-authenticate']).toContain('npx @switchboard-dev/switchboard token create');
      expect(wrong.headers['www-authenticate']).toContain('npx @switchboard-dev/switchboard token create');
    } finally {
      await npx.close();
    }
  });
});

/** An OAuth client as the SDK expects one: it has nothing stored and would open a browser. */
function oauthProvider(): OAuthClientProvider & { redirectedTo: URL[] } {
  let client: OAuthClientInformationMixed | undefined;
  let tokens: OAuthTokens | undefined;
  let verifier = '';
  const redirectedTo: URL[] = [];
  return {
    redirectedTo,
    get redirectUrl() {
      return 'http://127.0.0.1:1/callback';
    },
    get clientMetadata() {
      return { redirect_uris: ['http://127.0.0.1:1/callback'], client_name: 'switchboard-test' };
    },
    clientInformation: () => client,
    saveClientInformation: (info) => {
      client = info;
    },
    tokens: () => tokens,
    saveTokens: (saved) => {
      tokens = saved;
    },
    redirectToAuthorization: (url) => {
      redirectedTo.push(url);
    },
    saveCodeVerifier: (value) => {
      verifier = value;
    },
    codeVerifier: () => verifier,
  };
}

describe('clients that look for OAuth', () => {
  it('OAuth discovery is told switchboard uses bearer tokens: the official SDK client with an OAuth provider fails with the instruction, not a registration parse error', async () => {
    const provider = oauthProvider();
    const client = new Client({ name: 'oauth-minded', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(h.url, { authProvider: provider });
    const failure = await client.connect(transport).then(
      () => undefined,
      (err: unknown) => err,
    );
    await client.close().catch(() => undefined);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain(NO_OAUTH);
    // It never got as far as sending anyone to a browser.
    expect(provider.redirectedTo).toEqual([]);
  });

  it('OAuth registration says whether the token sent was the problem: a client that forwards its bearer token (as mcp-remote does) is told it is not valid', async () => {
    // The official SDK client sends requestInit's headers with its OAuth requests too.
    const client = new Client({ name: 'oauth-minded-with-token', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(h.url, {
      authProvider: oauthProvider(),
      requestInit: { headers: { Authorization: 'Bearer sbt_not-a-real-token' } },
    });
    const failure = await client.connect(transport).then(
      () => undefined,
      (err: unknown) => err,
    );
    await client.close().catch(() => undefined);
    expect((failure as Error).message).toContain(
      'switchboard does not use OAuth, and the bearer token sent is not valid (unknown or revoked); create one with switchboard token create',
    );
    // Raw: each case says what it found, and a foreign host is refused before any token is checked.
    const register = (headers: Record<string, string>) =>
      rawRequest(h.port, {
        method: 'POST',
        path: '/register',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{}',
      });
    const described = async (headers: Record<string, string>): Promise<string> =>
      (JSON.parse((await register(headers)).body) as { error_description: string }).error_description;
    expect(await described({})).toBe(NO_OAUTH);
    expect(await described({ authorization: 'Bearer sbt_not-a-real-token' })).toMatch(/token sent is not valid/);
    expect(await described({ authorization: `Bearer ${h.token}` })).toMatch(
      /token sent is valid: send it as Authorization/,
    );
    const foreign = await register({ authorization: `Bearer ${h.token}`, host: 'evil.example.com' });
    expect(foreign.status).toBe(403);
    expect(foreign.body).not.toContain('valid');
  });

  it('answers the registration, authorization and token endpoints with an OAuth error response, and serves no OAuth metadata', async () => {
    const expected = { error: 'invalid_request', error_description: NO_OAUTH };
    for (const [method, path] of [
      ['POST', '/register'],
      ['GET', '/authorize'],
      ['POST', '/token'],
    ] as const) {
      const response = await rawRequest(h.port, {
        method,
        path,
        headers: { 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      expect(response.status, path).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.headers['cache-control']).toBe('no-store');
      for (const [name, value] of Object.entries(MCP_SECURITY_HEADERS)) {
        expect(response.headers[name.toLowerCase()], `${name} on ${path}`).toBe(value);
      }
      expect(JSON.parse(response.body), path).toEqual(expected);
    }
    // No authorization server is advertised anywhere: discovery finds nothing and says so.
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-authorization-server',
    ]) {
      const response = await rawRequest(h.port, { method: 'GET', path });
      expect(response.status, path).toBe(404);
    }
  });
});
