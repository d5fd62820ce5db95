/**
 * Concurrency abuse, bounded by timeouts and caps (the composition root's SERVER_TIMEOUTS and
 * mcp.max_sessions), on the real composition root with its timeouts shortened so the test takes
 * seconds (test/reliability/slow-clients.test.ts checks the production defaults on a child):
 *   - slowloris heads: many sockets trickling header lines are cut once headersTimeout passes;
 *   - slow bodies: complete heads whose bodies trickle are cut once requestTimeout passes, and
 *     nothing is stored;
 *   - many parallel MCP initializations: never more than max_sessions are alive (an idle one
 *     makes room for a new one); with every slot holding a stream the next gets 503 with
 *     Retry-After, and a stream that ends frees its slot;
 * and all the while the server keeps answering health checks and storing deliveries promptly.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { openStream } from '../support/http-client.ts';
import { dripUntilClosed, openRaw } from '../support/raw-socket.ts';
import { fuzzConfig, startInProcessTarget, tableSnapshot, type FuzzTarget } from './support/target.ts';
import { MCP_HEADERS, postInitialize, postJson } from '../support/wire.ts';

const TIMEOUTS = { headersTimeoutMs: 1_500, requestTimeoutMs: 3_000, keepAliveTimeoutMs: 1_000, checkIntervalMs: 250 };
const MAX_SESSIONS = 8;
/** Slack on top of a timeout for the periodic check and a busy CI machine. */
const SLACK_MS = 2_500;

let db: TestDatabase;
let target: FuzzTarget;

beforeAll(async () => {
  db = await freshDatabase();
  target = await startInProcessTarget({
    databaseUrl: db.url,
    pool: db.pool,
    config: fuzzConfig({ mcp: { max_sessions: MAX_SESSIONS } }),
    serverTimeouts: TIMEOUTS,
  });
});

afterAll(async () => {
  await target?.close();
  await db?.close();
});

/** Health and a delivery both answered within the bound: the server is responsive. */
async function probe(boundMs: number): Promise<number> {
  const started = performance.now();
  const health = await fetch(`${target.url}/healthz`);
  expect(health.status).toBe(200);
  const stored = await postJson(`${target.url}/hooks/open`, '{"probe":true}');
  expect(stored.status).toBe(200);
  const took = performance.now() - started;
  expect(took, 'health + delivery while slow clients hold sockets').toBeLessThan(boundMs);
  return took;
}

function sessionHeaders(id: string): Record<string, string> {
  return { authorization: `Bearer ${target.token}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
}

/** The sessions among `ids` the server still holds: a ping answers 200 there and 404 where one was evicted. */
async function liveSessions(ids: string[]): Promise<string[]> {
  const alive: string[] = [];
  for (const [n, id] of ids.entries()) {
    const answer = await fetch(`${target.url}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...sessionHeaders(id) },
      body: JSON.stringify({ jsonrpc: '2.0', id: n + 1, method: 'ping' }),
    });
    await answer.text();
    expect([200, 404]).toContain(answer.status);
    if (answer.status === 200) alive.push(id);
  }
  return alive;
}

describe('slow clients and parallel sessions', () => {
  it('cuts slowloris heads after headersTimeout and keeps answering meanwhile', async () => {
    const sockets = await Promise.all(Array.from({ length: 100 }, () => openRaw(target.port)));
    const started = performance.now();
    const closedAt = sockets.map((s) => {
      s.socket.write('POST /hooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      return dripUntilClosed(s, 'X-Slow: a\r\n', 200);
    });
    const probes: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      probes.push(await probe(1_500));
      await delay(200);
    }
    const times = await Promise.all(closedAt);
    const latest = Math.max(...times) - started;
    expect(latest, 'every slow head was cut').toBeLessThan(TIMEOUTS.headersTimeoutMs + SLACK_MS);
    expect(Math.min(...times) - started, 'not before the timeout').toBeGreaterThanOrEqual(
      TIMEOUTS.headersTimeoutMs - 300,
    );
    const answers = await Promise.all(sockets.map((s) => s.response));
    // Node answers 408 Request Timeout when it cuts a head (or just closes the socket).
    for (const answer of answers) if (answer !== null) expect(answer.status).toBe(408);
    console.info(
      `slowloris: 100 heads cut ${Math.round(latest)} ms after they started; probes took ${probes.map((p) => Math.round(p)).join(', ')} ms`,
    );
  });

  it('cuts trickled bodies after requestTimeout, storing nothing, and keeps answering meanwhile', async () => {
    const before = await tableSnapshot(target.pool, ['events']);
    const sockets = await Promise.all(Array.from({ length: 50 }, () => openRaw(target.port)));
    const started = performance.now();
    const closedAt = sockets.map((s) => {
      s.socket.write(
        'POST /hooks/open HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{',
      );
      return dripUntilClosed(s, ' ', 200);
    });
    await delay(300);
    const during = await tableSnapshot(target.pool, ['events']);
    await probe(1_500);
    const times = await Promise.all(closedAt);
    const latest = Math.max(...times) - started;
    expect(latest, 'every slow body was cut').toBeLessThan(TIMEOUTS.requestTimeoutMs + SLACK_MS);
    expect(Math.min(...times) - started).toBeGreaterThanOrEqual(TIMEOUTS.requestTimeoutMs - 300);
    // Nothing from the slow bodies was stored: the only new rows are the probe's one delivery.
    const after = await tableSnapshot(target.pool, ['events']);
    expect(during.events).toBe(before.events);
    expect(Number(after.events?.split(':')[0])).toBe(Number(before.events?.split(':')[0]) + 1);
    console.info(`slow bodies: 50 requests cut ${Math.round(latest)} ms after they started`);
  });

  it(`caps MCP sessions at mcp.max_sessions (${MAX_SESSIONS}) under 40 parallel initializations`, async () => {
    const initialize = (): Promise<Response> => postInitialize(`${target.url}/mcp`, target.token, 'parallel');
    const answers = await Promise.all(Array.from({ length: 40 }, () => initialize()));
    const bodies = await Promise.all(answers.map((a) => a.text()));
    // An idle session (no call running, no stream open) makes room for a new one, so most are
    // admitted; only an initialize that finds every slot busy with another initialize is refused.
    const opened = answers.filter((a) => a.status === 200).map((a) => a.headers.get('mcp-session-id') ?? '');
    for (const [i, answer] of answers.entries()) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status !== 503) continue;
      expect(answer.headers.get('retry-after')).toBe('5');
      expect(JSON.parse(bodies[i] ?? '')).toMatchObject({
        jsonrpc: '2.0',
        error: { code: -32000, message: expect.stringMatching(/too many MCP sessions/) },
      });
    }
    expect(opened.length).toBeGreaterThanOrEqual(MAX_SESSIONS);
    expect(new Set(opened).size).toBe(opened.length);
    // However many were admitted, never more than the cap are alive: the rest were evicted (404).
    const alive = await liveSessions(opened);
    expect(alive.length).toBeGreaterThan(0);
    expect(alive.length).toBeLessThanOrEqual(MAX_SESSIONS);
    await probe(1_500);

    // Busy sessions are never evicted: with a stream open on every slot, the next initialize is refused.
    const held: string[] = [...alive];
    while (held.length < MAX_SESSIONS) {
      const answer = await initialize();
      expect(answer.status).toBe(200);
      await answer.text();
      held.push(answer.headers.get('mcp-session-id') ?? '');
    }
    const streams = await Promise.all(
      held.map((id) => openStream(target.port, { ...sessionHeaders(id), accept: 'text/event-stream' }, '/mcp')),
    );
    for (const stream of streams) expect(stream.status).toBe(200);
    const full = await initialize();
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toBe('5');
    await full.text();
    await probe(1_500);

    // A stream that ends leaves its session idle: the next initialize takes that slot, and only it.
    streams[0]?.close();
    let again = await initialize();
    for (let attempt = 0; again.status === 503 && attempt < 40; attempt += 1) {
      await again.text();
      await delay(50);
      again = await initialize();
    }
    expect(again.status).toBe(200);
    await again.text();
    expect(await liveSessions(held)).toEqual(held.slice(1));
    for (const stream of streams) stream.close();
    for (const id of [...held.slice(1), again.headers.get('mcp-session-id') ?? '']) {
      await fetch(`${target.url}/mcp`, { method: 'DELETE', headers: sessionHeaders(id) }).then((r) => r.text());
    }
    expect(target.faults()).toEqual([]);
  });
});
