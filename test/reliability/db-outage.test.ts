/**
 * PostgreSQL goes away under load: a switchboard child reaches its database only through a TCP
 * proxy the test controls, and the proxy drops every connection and refuses new ones for a few
 * seconds while signed deliveries keep arriving.
 *
 * While the database is down: deliveries are answered 503 with Retry-After (never 2xx, never
 * another 5xx, never left unanswered), /healthz is 503 {"status":"db down"}, and MCP tools (the
 * official SDK Client, on a session opened before the outage) return `internal` with a message
 * saying what is wrong. When it comes back, switchboard recovers by itself, without a restart,
 * within 5 s: ingest 200, /healthz ok, tools answer again. Every delivery acknowledged with 2xx,
 * before, during or after, is stored with its exact bytes.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import {
  makeGithubDelivery,
  makePayload,
  runGithubLoad,
  seededRandom,
  type DeliveryOutcome,
} from '../../bench/load-driver.ts';
import { createTokenRepository } from '../../src/store/records/token-repository.ts';
import { callTool, connectMcp, openEventStream, waitFor } from './support/clients.ts';
import { reliabilitySuite } from './support/suite.ts';
import { postGithubDelivery, postInitialize } from '../support/wire.ts';

const SECRET = `outage-secret-${randomBytes(8).toString('hex')}`;
const OUTAGE_MS = 3_000;
const RECOVERY_BOUND_MS = 5_000;

const suite = reliabilitySuite({
  proxy: 'database',
  child: {
    config: {
      providers: { github: { preset: 'github', secret: SECRET } },
      rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
    },
    logLevel: 'warn',
  },
  mcp: true,
});

async function deliverOne(n: number): Promise<{
  status: number;
  body: Buffer;
  id: string | undefined;
  retryAfter: string | null;
}> {
  const delivery = await makeGithubDelivery(SECRET, makePayload(seededRandom(n), n));
  const response = await postGithubDelivery(suite.child.url, delivery);
  const answer = (await response.json()) as { id?: string };
  return {
    status: response.status,
    body: delivery.body,
    id: answer.id,
    retryAfter: response.headers.get('retry-after'),
  };
}

async function health(): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${suite.child.url}/healthz`);
  return { status: response.status, body: await response.json() };
}

describe('database outage', () => {
  it('answers 503 while PostgreSQL is unreachable and recovers by itself within 5 s', async () => {
    expect((await deliverOne(1)).status).toBe(200);
    expect(await health()).toEqual({ status: 200, body: { status: 'ok', role: 'all' } });
    expect((await callTool(suite.mcp, 'list_webhook_events', { limit: 5 })).ok).toBe(true);

    const acknowledged = new Map<string, Buffer>();
    const outcomes: DeliveryOutcome[] = [];
    const stopLoad = new AbortController();
    const load = runGithubLoad({
      baseUrl: suite.child.url,
      secret: SECRET,
      concurrency: 8,
      signal: stopLoad.signal,
      seed: 7,
      requestTimeoutMs: 20_000,
      onOutcome: (o) => {
        outcomes.push(o);
        if (o.status === 200 && o.id !== null) acknowledged.set(o.id, o.delivery.body);
      },
    });
    let downAt = 0;
    let upAt = 0;
    let recoveredMs = Number.NaN;
    try {
      await delay(700);
      await suite.proxy.down();
      downAt = performance.now();
      try {
        await checkWhileDown();
        const remaining = OUTAGE_MS - (performance.now() - downAt);
        if (remaining > 0) await delay(remaining);
      } finally {
        // Whatever failed above, the rest of the file gets its database back.
        await suite.proxy.up();
        upAt = performance.now();
      }

      // Recovery by itself, no restart: ingest and health both fine again within the bound.
      await waitFor('ingest to store again', async () => ((await deliverOne(3)).status === 200 ? true : undefined), {
        timeoutMs: RECOVERY_BOUND_MS,
        intervalMs: 100,
      });
      await waitFor('healthz ok', async () => ((await health()).status === 200 ? true : undefined), {
        timeoutMs: RECOVERY_BOUND_MS,
        intervalMs: 100,
      });
      recoveredMs = performance.now() - upAt;
      expect(recoveredMs).toBeLessThan(RECOVERY_BOUND_MS);
      expect(
        (await callTool(suite.mcp, 'list_webhook_events', { limit: 5 })).ok,
        'tools answer again on the same MCP session',
      ).toBe(true);
      await delay(500);
    } finally {
      stopLoad.abort();
    }
    const report = await load;

    // Load outcomes: nothing unanswered, nothing but 200 and 503, and no 2xx for a request that
    // started and ended while the database was unreachable.
    expect(
      report.failed,
      outcomes
        .filter((o) => o.status === null)
        .map((o) => o.error)
        .join('; '),
    ).toBe(0);
    for (const status of new Set(outcomes.map((o) => o.status))) expect([200, 503]).toContain(status);
    const duringOutage = outcomes.filter((o) => o.startedAt >= downAt && o.startedAt + o.latencyMs <= upAt);
    expect(duringOutage.length, 'the load kept arriving during the outage').toBeGreaterThan(0);
    expect(duringOutage.filter((o) => o.status !== 503).map((o) => o.status)).toEqual([]);
    expect(
      outcomes.some((o) => o.status === 200 && o.startedAt > upAt),
      'the load was stored again after recovery',
    ).toBe(true);

    // Every acknowledged delivery is stored, byte for byte (read directly, not through the proxy).
    const ids = [...acknowledged.keys()];
    const rows = await suite.db.pool.any(
      sql.type(
        z.object({ id: z.string(), payload: z.instanceof(Buffer) }),
      )`SELECT id::text AS id, payload FROM events WHERE id = ANY(${sql.array(ids, 'uuid')})`,
    );
    const stored = new Map(rows.map((r) => [String(r.id), r.payload]));
    expect(ids.filter((id) => !stored.get(id)?.equals(acknowledged.get(id) ?? Buffer.alloc(0)))).toEqual([]);

    expect(suite.child.isRunning()).toBe(true);
    expect(suite.child.output()).not.toMatch(/unhandledRejection|UnhandledPromiseRejection|uncaughtException/);
    console.info(
      `db outage: ${report.sent} deliveries (${report.ok} acked, ${report.non2xx} answered 503, ${report.failed} unanswered), ` +
        `${duringOutage.length} during the ${OUTAGE_MS} ms outage, all 503; recovered ${Math.round(recoveredMs)} ms after the database returned`,
    );
  });

  it('resumes the live bus after the outage: a new event reaches /api/stream', async () => {
    // The LISTEN connection reconnects with its own backoff (documented in docs/reliability.md);
    // the 5 s bound above is for storing and health.
    const stream = await openEventStream(suite.child.url, suite.child.token ?? '');
    try {
      expect(stream.status).toBe(200);
      let n = 100;
      const delivered = await waitFor(
        'a delivery announced on the live stream',
        async () => {
          n += 1;
          const sent = await deliverOne(n);
          if (sent.status !== 200 || sent.id === undefined) return undefined;
          return stream.waitForMessage((m) => m.id === sent.id, 1_500).catch(() => undefined);
        },
        { timeoutMs: 20_000, intervalMs: 0 },
      );
      expect(delivered.event).toBe('event');
    } finally {
      stream.close();
    }
  });
});

describe('database outage with managed tokens', () => {
  it('answers /mcp and /api with 503 (not 500) while the token lookup cannot reach the database', async () => {
    // A managed token is looked up in the database (then cached for a few seconds), unlike
    // SWITCHBOARD_TOKEN. This one is created directly and not used before the outage, so the
    // first lookup happens while the database is unreachable.
    const { token } = await createTokenRepository(suite.db.pool).create(`agent-${randomBytes(3).toString('hex')}`);
    await suite.proxy.down();
    try {
      await delay(200);
      const mcpAnswer = await postInitialize(suite.child.mcpUrl, token, 'managed');
      const mcpText = await mcpAnswer.text();
      expect(mcpAnswer.status, mcpText).toBe(503);
      expect(mcpAnswer.headers.get('retry-after')).toBe('5');
      expect(JSON.parse(mcpText)).toEqual({
        error: { code: 'unavailable', message: 'database unavailable; try again shortly' },
      });
      const apiAnswer = await fetch(`${suite.child.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(apiAnswer.status).toBe(503);
      await apiAnswer.arrayBuffer();
    } finally {
      await suite.proxy.up();
    }
    const managed = await waitFor(
      'the managed token to work again',
      () => connectMcp(suite.child.mcpUrl, token, 'managed-token'),
      {
        timeoutMs: RECOVERY_BOUND_MS,
        intervalMs: 200,
      },
    );
    expect((await callTool(managed, 'list_webhook_events', { limit: 1 })).ok).toBe(true);
    await managed.close();
  });
});

/** What the outside sees while the database is unreachable. */
async function checkWhileDown(): Promise<void> {
  // Health says so at once (well within its 2 s probe bound).
  const downHealth = await waitFor(
    'healthz to report db down',
    async () => {
      const h = await health();
      return h.status === 503 ? h : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 100 },
  );
  expect(downHealth.body).toEqual({ status: 'db down', role: 'all' });

  // A direct delivery: 503 with Retry-After.
  const direct = await deliverOne(2);
  expect(direct.status).toBe(503);
  expect(direct.retryAfter).toBe('5');

  // MCP tools, on the session opened before the outage: internal, and saying why.
  for (const [tool, args] of [
    ['list_webhook_events', { limit: 5 }],
    ['get_webhook_event', { id: '01890000-0000-7000-8000-000000000000' }],
  ] as const) {
    const outcome = await callTool(suite.mcp, tool, args);
    expect(outcome.ok, `${tool} during the outage`).toBe(false);
    if (!outcome.ok) {
      expect(outcome.error.code).toBe('internal');
      expect(outcome.error.message, `${tool}: the message should say the database is unavailable`).toMatch(
        /database unavailable/i,
      );
      expect(outcome.error.message, 'internal errors carry a log reference').toMatch(/reference [0-9a-f-]{36}/);
    }
  }
  // list_providers reads no table: it keeps working.
  expect((await callTool(suite.mcp, 'list_providers')).ok).toBe(true);
}
