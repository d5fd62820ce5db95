/**
 * SIGTERM is a graceful shutdown: switchboard stops accepting connections at once, lets the
 * requests already in flight finish (a delivery whose body is still arriving is stored and
 * acknowledged), bounds that wait (a request that never finishes is cut after the drain timeout),
 * ends MCP sessions properly (their SSE streams end cleanly, not by a reset), stops an embedded
 * PostgreSQL cleanly (postmaster gone, cluster marked shut down, a restart on the same data
 * directory finds the data) and exits with code 0.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery, makePayload, seededRandom } from '../../bench/load-driver.ts';
import { openRaw } from '../support/raw-socket.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { randomToken, spawnSwitchboard, waitForExit, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { connectMcp } from './support/clients.ts';
import { postGithubDelivery, postInitialize } from '../support/wire.ts';

const SECRET = `shutdown-secret-${randomBytes(8).toString('hex')}`;
const DRAIN_TIMEOUT_MS = 2_500;
const config = { providers: { github: { preset: 'github', secret: SECRET } } };

let db: TestDatabase;
const children: SpawnedSwitchboard[] = [];

beforeAll(async () => {
  db = await freshDatabase();
});

afterAll(async () => {
  for (const child of children) {
    child.kill('SIGKILL');
    await child.exited;
    child.cleanup();
  }
  await db?.close();
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A delivery's request head and body, to send over a raw socket in pieces. */
async function rawDelivery(n: number): Promise<{ head: string; body: Buffer; deliveryId: string }> {
  const delivery = await makeGithubDelivery(SECRET, makePayload(seededRandom(n), n));
  const head =
    'POST /hooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\nx-github-event: issues\r\n' +
    `x-github-delivery: ${delivery.deliveryId}\r\nx-hub-signature-256: ${delivery.signature}\r\ncontent-length: ${delivery.body.length}\r\n\r\n`;
  return { head, body: delivery.body, deliveryId: delivery.deliveryId };
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** Opens an MCP session over raw HTTP and its standalone SSE stream (GET /mcp). */
async function openMcpStream(child: SpawnedSwitchboard): Promise<{ ended: Promise<'end' | 'reset'> }> {
  const init = await postInitialize(child.mcpUrl, child.token ?? '', 'shutdown-test');
  expect(init.status).toBe(200);
  await init.text();
  const sessionId = init.headers.get('mcp-session-id') ?? '';
  expect(sessionId).not.toBe('');
  const headers = {
    authorization: `Bearer ${child.token}`,
    'mcp-session-id': sessionId,
    'mcp-protocol-version': '2025-06-18',
  };
  const notified = await fetch(child.mcpUrl, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(notified.status).toBe(202);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: child.port,
        path: '/mcp',
        method: 'GET',
        headers: { ...headers, accept: 'text/event-stream' },
      },
      (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          reject(new Error(`GET /mcp answered ${res.statusCode}`));
          return;
        }
        res.resume();
        const ended = new Promise<'end' | 'reset'>((done) => {
          res.once('end', () => done('end'));
          res.once('error', () => done('reset'));
          res.once('aborted', () => done('reset'));
        });
        resolve({ ended });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('graceful shutdown on SIGTERM', () => {
  it('stops accepting, drains in-flight deliveries (bounded), ends MCP sessions and exits 0', async () => {
    const child = await spawnSwitchboard({
      config,
      databaseUrl: db.url,
      logLevel: 'debug',
      env: { SWITCHBOARD_DRAIN_TIMEOUT_MS: String(DRAIN_TIMEOUT_MS) },
    });
    children.push(child);

    // An MCP session with an open server-to-client stream, and one through the official client.
    const stream = await openMcpStream(child);
    const sdkClient = await connectMcp(child.mcpUrl, child.token ?? '');

    // Two deliveries in flight: headers and half the body sent.
    const finishing = await rawDelivery(1);
    const stuck = await rawDelivery(2);
    const a = await openRaw(child.port);
    const b = await openRaw(child.port);
    await a.write(finishing.head);
    await a.write(finishing.body.subarray(0, finishing.body.length >> 1));
    await b.write(stuck.head);
    await b.write(stuck.body.subarray(0, 10));
    await delay(300);

    const signalledAt = performance.now();
    child.kill('SIGTERM');
    // Stops accepting at once.
    const refused = await (async () => {
      for (let i = 0; i < 40; i += 1) {
        if (await refusesConnections(child.port)) return true;
        await delay(50);
      }
      return false;
    })();
    expect(refused, 'new connections are refused once SIGTERM arrived').toBe(true);

    // The MCP session's stream ends cleanly, during shutdown, not by a reset at exit.
    expect(await stream.ended).toBe('end');

    // The in-flight delivery finishes: stored and acknowledged.
    await a.write(finishing.body.subarray(finishing.body.length >> 1));
    const answer = await a.response;
    expect(answer?.status, answer?.body.toString()).toBe(200);
    // Keep-alive clients are told to go elsewhere for their next request.
    expect(answer?.headers.connection).toBe('close');
    const id = (JSON.parse(answer?.body.toString() ?? '{}') as { id?: string }).id ?? '';
    const stored = await db.pool.maybeOne(
      sql.type(z.object({ payload: z.instanceof(Buffer) }))`SELECT payload FROM events WHERE id = ${id}::uuid`,
    );
    expect(stored?.payload?.equals(finishing.body)).toBe(true);

    // The stuck one does not hold shutdown past the drain timeout: its connection is cut.
    const exit = await waitForExit(child, DRAIN_TIMEOUT_MS + 15_000);
    const tookMs = performance.now() - signalledAt;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await b.response, 'the never-finished request gets no acknowledgement').toBeNull();
    expect(tookMs).toBeGreaterThanOrEqual(DRAIN_TIMEOUT_MS - 200);
    expect(tookMs).toBeLessThan(DRAIN_TIMEOUT_MS + 10_000);
    const notStored = await db.pool.maybeOne(
      sql.type(z.object({ id: z.string() }))`SELECT id FROM events WHERE external_id = ${stuck.deliveryId}`,
    );
    expect(notStored).toBeNull();

    const lines = child.logLines();
    const ended = lines.filter((l) => l.msg === 'MCP session ended' && l.why === 'shutdown');
    expect(ended.length, 'both MCP sessions ended by the shutdown').toBe(2);
    expect(lines.some((l) => l.msg === 'stopped')).toBe(true);
    expect(child.output()).not.toMatch(/unhandledRejection|UnhandledPromiseRejection|uncaughtException/);
    await sdkClient.close().catch(() => undefined);
    console.info(
      `graceful shutdown (DATABASE_URL): exit 0 after ${Math.round(tookMs)} ms with a ${DRAIN_TIMEOUT_MS} ms drain bound`,
    );
  });

  it('does not wait for idle keep-alive connections: exits promptly once the last request is answered', async () => {
    const child = await spawnSwitchboard({ config, databaseUrl: db.url, logLevel: 'warn' });
    children.push(child);
    const delivery = await rawDelivery(4);
    const socket = await openRaw(child.port);
    await socket.write(delivery.head);
    await delay(200);
    const signalledAt = performance.now();
    child.kill('SIGTERM');
    await delay(300);
    await socket.write(delivery.body);
    const answer = await socket.response;
    expect(answer?.status).toBe(200);
    expect(answer?.headers.connection).toBe('close');
    const answeredAt = performance.now();
    // The server closes the connection right after the answer instead of keeping it alive…
    await socket.closed;
    expect(performance.now() - answeredAt).toBeLessThan(2_000);
    expect(await waitForExit(child, 20_000)).toEqual({ code: 0, signal: null });
    // …so the exit does not wait for keepAliveTimeout (5 s), which it did before the drain
    // closed idle connections as they appeared (measured then: 6.8 s from SIGTERM to exit).
    expect(performance.now() - answeredAt).toBeLessThan(4_500);
    console.info(
      `graceful shutdown: exit ${Math.round(performance.now() - signalledAt)} ms after SIGTERM, ${Math.round(performance.now() - answeredAt)} ms after the last answer`,
    );
  });

  it('stops an embedded PostgreSQL cleanly, and a restart on the same data directory finds the data', async () => {
    const token = randomToken();
    const first = await spawnSwitchboard({
      config,
      databaseUrl: null,
      token,
      logLevel: 'info',
      startTimeoutMs: 120_000,
    });
    children.push(first);
    const clusterDir = path.join(first.dataDir, 'postgres');
    const postmasterPid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(isAlive(postmasterPid)).toBe(true);

    const delivery = await makeGithubDelivery(SECRET, makePayload(seededRandom(3), 3));
    const response = await postGithubDelivery(first.url, delivery);
    expect(response.status).toBe(200);
    const { id } = (await response.json()) as { id: string };

    first.kill('SIGTERM');
    const exit = await waitForExit(first, 40_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(isAlive(postmasterPid), 'the postmaster is gone').toBe(false);
    expect(
      () => readFileSync(path.join(clusterDir, 'postmaster.pid')),
      'postmaster.pid removed by a clean stop',
    ).toThrow();
    // pg_control's state (int32 at offset 16 on PostgreSQL 15–17): 1 = DB_SHUTDOWNED, a clean
    // shutdown checkpoint; a killed server leaves 6 (in production).
    const control = readFileSync(path.join(clusterDir, 'global', 'pg_control'));
    expect(control.readInt32LE(16), 'cluster state in pg_control').toBe(1);

    const second = await spawnSwitchboard({
      config,
      databaseUrl: null,
      dataDir: first.dataDir,
      token,
      logLevel: 'debug',
      startTimeoutMs: 120_000,
    });
    children.push(second);
    const raw = await fetch(`${second.url}/api/events/${id}/raw`, { headers: { authorization: `Bearer ${token}` } });
    expect(raw.status).toBe(200);
    expect(Buffer.from(await raw.arrayBuffer()).equals(delivery.body)).toBe(true);
    const postgresLines = second
      .logLines()
      .map((l) => l.postgres)
      .filter((l): l is string => typeof l === 'string');
    expect(
      postgresLines.some((l) => /database system was shut down at/.test(l)),
      postgresLines.join('\n'),
    ).toBe(true);
    expect(postgresLines.some((l) => /not properly shut down|automatic recovery/.test(l))).toBe(false);

    const secondPid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    second.kill('SIGTERM');
    expect(await waitForExit(second, 40_000)).toEqual({ code: 0, signal: null });
    expect(isAlive(secondPid)).toBe(false);
    first.cleanup();
  });
});
