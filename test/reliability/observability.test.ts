/**
 * Observability of a real switchboard child:
 *   - /metrics needs a bearer token by default and serves Prometheus text with the database pool
 *     and MCP session gauges;
 *   - logs are structured pino JSON, every request line carries the request id the client got in
 *     X-Request-Id;
 *   - secrets never reach the logs, even at LOG_LEVEL=debug: the signing secret and hook token from
 *     the config, the signatures and tokens deliveries carried (accepted and rejected ones), the
 *     bearer tokens of API and MCP calls (valid and invalid), a cookie, a token in a query string,
 *     the DATABASE_URL password, and the signature a replay re-signed with.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery } from '../../bench/load-driver.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { answerWith, startConsumer, type Consumer } from '../support/local-server.ts';
import { spawnSwitchboard, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { callTool, connectMcp } from './support/clients.ts';

const secret = (label: string): string => `${label}-${randomBytes(12).toString('hex')}`;
const GITHUB_SECRET = secret('ghsecret');
const HOOK_TOKEN = secret('hooktoken');
const DB_PASSWORD = secret('dbpassword');
let dbPassword = DB_PASSWORD;

let db: TestDatabase;
let child: SpawnedSwitchboard;
let consumer: Consumer;
const clients: Client[] = [];

beforeAll(async () => {
  db = await freshDatabase();
  consumer = await startConsumer(undefined, answerWith(204));
  // The embedded test server's URL carries a real password; a server with trust authentication
  // (CI's) accepts any, so one is put in the URL. Either way the logs must not show it.
  const url = new URL(db.url);
  if (url.password === '') url.password = DB_PASSWORD;
  dbPassword = decodeURIComponent(url.password);
  child = await spawnSwitchboard({
    config: {
      providers: {
        github: { preset: 'github', secret: GITHUB_SECRET },
        hook: { trust_mode: 'token', token: HOOK_TOKEN },
      },
      replay: { default_target: consumer.url('/webhooks') },
    },
    databaseUrl: url.toString(),
    logLevel: 'debug',
  });
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await child?.stop();
  child?.cleanup();
  await consumer?.close();
  await db?.close();
});

describe('/metrics', () => {
  it('requires a bearer token by default', async () => {
    const anonymous = await fetch(`${child.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await anonymous.text()).not.toMatch(/switchboard_/);
    const wrong = await fetch(`${child.url}/metrics`, { headers: { authorization: 'Bearer not-a-valid-token' } });
    expect(wrong.status).toBe(401);
  });

  it('serves Prometheus text with the pool and MCP session gauges', async () => {
    clients.push(
      await connectMcp(child.mcpUrl, child.token ?? '', 'metrics-a'),
      await connectMcp(child.mcpUrl, child.token ?? '', 'metrics-b'),
    );
    const scrape = async (): Promise<{ type: string; text: string }> => {
      const response = await fetch(`${child.url}/metrics`, { headers: { authorization: `Bearer ${child.token}` } });
      expect(response.status).toBe(200);
      return { type: response.headers.get('content-type') ?? '', text: await response.text() };
    };
    // The gauges are read at scrape time (metrics-route.ts observePool): the first scrape after the
    // sessions opened already counts them.
    const { type, text } = await scrape();
    expect(text).toMatch(/^switchboard_mcp_sessions 2$/m);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toMatch(/^# TYPE switchboard_db_pool_connections gauge$/m);
    for (const state of ['active', 'idle', 'waiting']) {
      expect(text).toMatch(new RegExp(`^switchboard_db_pool_connections\\{state="${state}"\\} \\d+$`, 'm'));
    }
    expect(text).toMatch(/^# TYPE switchboard_mcp_sessions gauge$/m);
    expect(text).toMatch(/^# TYPE switchboard_webhook_deliveries_total counter$/m);
    expect(text).toMatch(/^switchboard_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^switchboard_nodejs_eventloop_lag_seconds \d/m);
    expect(text).not.toContain('switchboard_process_process_');
  });
});

describe('logs', () => {
  it('are structured, carry request ids, and never contain a secret, token or signature', async () => {
    const leaks: string[] = [GITHUB_SECRET, HOOK_TOKEN, dbPassword, child.token ?? ''];
    const post = async (path: string, body: Buffer | string, headers: Record<string, string>): Promise<Response> => {
      const response = await fetch(`${child.url}${path}`, {
        method: 'POST',
        headers,
        body: typeof body === 'string' ? body : new Uint8Array(body),
      });
      await response.arrayBuffer();
      return response;
    };

    // Signed deliveries: valid, and signed with the wrong secret.
    const good = await makeGithubDelivery(GITHUB_SECRET, Buffer.from('{"action":"opened","number":1}'));
    const bad = await makeGithubDelivery(secret('wrongsecret'), Buffer.from('{"action":"opened","number":2}'));
    for (const d of [good, bad]) leaks.push(d.signature, d.signature.replace(/^sha256=/, ''));
    const githubHeaders = (d: typeof good): Record<string, string> => ({
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': d.deliveryId,
      'x-hub-signature-256': d.signature,
    });
    const goodAnswer = await post('/hooks/github', good.body, githubHeaders(good));
    expect(goodAnswer.status).toBe(200);
    const requestId = goodAnswer.headers.get('x-request-id') ?? '';
    expect(requestId).not.toBe('');
    expect((await post('/hooks/github', bad.body, githubHeaders(bad))).status).toBe(401);

    // Token deliveries: header, Bearer, a wrong token, a token in the query string, a cookie.
    const wrongToken = secret('wrongtoken');
    const queryToken = secret('querytoken');
    const cookie = secret('cookiesecret');
    leaks.push(wrongToken, queryToken, cookie);
    expect(
      (
        await post('/hooks/hook', '{"type":"deploy"}', {
          'content-type': 'application/json',
          'x-webhook-token': HOOK_TOKEN,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await post('/hooks/hook', '{"type":"deploy"}', {
          'content-type': 'application/json',
          authorization: `Bearer ${HOOK_TOKEN}`,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await post('/hooks/hook', '{"type":"deploy"}', {
          'content-type': 'application/json',
          'x-webhook-token': wrongToken,
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await post(`/hooks/hook?token=${queryToken}`, '{"type":"deploy"}', {
          'content-type': 'application/json',
          cookie: `session=${cookie}`,
        })
      ).status,
    ).toBe(400);

    // API and MCP calls: a valid bearer and an invalid one.
    const wrongBearer = secret('wrongbearer');
    leaks.push(wrongBearer);
    const apiOk = await fetch(`${child.url}/api/events?limit=5`, {
      headers: { authorization: `Bearer ${child.token}`, cookie: `session=${cookie}` },
    });
    expect(apiOk.status).toBe(200);
    await apiOk.arrayBuffer();
    const apiBad = await fetch(`${child.url}/api/events`, { headers: { authorization: `Bearer ${wrongBearer}` } });
    expect(apiBad.status).toBe(401);
    await apiBad.arrayBuffer();
    const mcpBad = await fetch(child.mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${wrongBearer}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
    });
    expect(mcpBad.status).toBe(401);
    await mcpBad.arrayBuffer();
    const mcp = await connectMcp(child.mcpUrl, child.token ?? '', 'logs');
    clients.push(mcp);
    const listed = await callTool(mcp, 'list_webhook_events', { limit: 5 });
    expect(listed.ok).toBe(true);

    // A replay, re-signed with the provider secret: the new signature must not be logged either.
    // The verified delivery, not the newest: the badly signed one is never re-signed.
    const stored = await callTool(mcp, 'list_webhook_events', { provider: 'github', limit: 5 });
    const events = stored.ok ? (stored.value.events as Array<{ id: string; verified: boolean }>) : [];
    const eventId = String(events.find((e) => e.verified)?.id);
    const replayed = await callTool(mcp, 'replay_webhook_event', { id: eventId });
    expect(replayed.ok, replayed.ok ? '' : replayed.error.message).toBe(true);
    const resigned = consumer.requests.at(-1)?.headers['x-hub-signature-256'];
    expect(resigned).toMatch(/^sha256=[0-9a-f]{64}$/);
    leaks.push(String(resigned), String(resigned).replace(/^sha256=/, ''));

    await new Promise((resolve) => setTimeout(resolve, 300));
    const output = child.output();
    for (const value of leaks) {
      expect(value.length).toBeGreaterThan(10);
      expect(output.includes(value), `log output contains a secret value (${value.slice(0, 12)}…)`).toBe(false);
    }

    // Structured: every stdout line after the banner is pino JSON.
    const stdoutLines = output.split('\n').filter((l) => l.startsWith('{'));
    expect(stdoutLines.length).toBeGreaterThan(20);
    const lines = child.logLines();
    expect(
      lines.every((l) => typeof l.level === 'number' && typeof l.time === 'number' && typeof l.msg === 'string'),
    ).toBe(true);
    // The request id the client got is on the request's log lines.
    const forRequest = lines.filter((l) => l.requestId === requestId);
    expect(forRequest.some((l) => l.msg === 'request' && l.path === '/hooks/github' && l.status === 200)).toBe(true);
    expect(lines.filter((l) => l.msg === 'request').every((l) => typeof l.requestId === 'string')).toBe(true);
    // Redaction is the second line of defence; first, the things above are not handed to the logger.
    const redactions = output.split('[redacted]').length - 1;
    console.info(
      `log scan: ${leaks.length} secret values, ${stdoutLines.length} log lines, none leaked (${redactions} redacted fields)`,
    );
  });
});
