/**
 * Redis goes away: a switchboard child reaches Redis only through a TCP proxy the test controls.
 * While Redis is down, HTTP ingestion is untouched (every signed delivery 200, /healthz ok) and
 * list_providers (official MCP SDK Client) shows the queue providers' connection as
 * disconnected; when Redis returns, the sources reconnect by themselves and list_providers shows
 * connected again. Stream messages XADDed while switchboard could not reach Redis are stored
 * after it reconnects (at-least-once); the pub/sub provider is subscribed again and stores what
 * is published after the reconnect (what was published during the outage is gone: at-most-once,
 * as documented).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { runGithubLoad, type LoadReport } from '../../bench/load-driver.ts';
import { callTool, waitFor } from './support/clients.ts';
import { reliabilitySuite } from './support/suite.ts';

const SECRET = `redis-outage-secret-${randomBytes(8).toString('hex')}`;
const SUFFIX = randomBytes(6).toString('hex');
const STREAM = `switchboard-outage-stream-${SUFFIX}`;
const CHANNEL = `switchboard-outage-channel-${SUFFIX}`;

const suite = reliabilitySuite({
  proxy: 'redis',
  redis: { deleteAfter: [STREAM] },
  child: {
    config: {
      providers: {
        github: { preset: 'github', secret: SECRET },
        jobs: { family: 'queue', channel: STREAM, mode: 'streams' },
        pings: { family: 'queue', channel: CHANNEL },
      },
      rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
    },
    logLevel: 'warn',
  },
  mcp: true,
});

async function connections(): Promise<Record<string, string | undefined>> {
  const outcome = await callTool(suite.mcp, 'list_providers');
  if (!outcome.ok) throw new Error(`list_providers failed: ${outcome.error.message}`);
  const providers = outcome.value.providers as Array<{ name: string; connection?: string }>;
  return Object.fromEntries(providers.map((p) => [p.name, p.connection]));
}

/** Waits until list_providers shows both queue providers' connection in this state. */
function bothQueues(
  state: 'connected' | 'disconnected',
  what: string,
  options: { timeoutMs: number; intervalMs: number },
): Promise<Record<string, string | undefined>> {
  return waitFor(
    what,
    async () => {
      const c = await connections();
      return c.jobs === state && c.pings === state ? c : undefined;
    },
    options,
  );
}

async function storedQueueIds(provider: string, externalIds: readonly string[]): Promise<Set<string>> {
  const rows = await suite.db.pool.anyFirst(
    sql.unsafe`SELECT external_id FROM events WHERE provider = ${provider} AND external_id = ANY(${sql.array([...externalIds], 'text')})`,
  );
  return new Set(rows.map(String));
}

async function storedPayloadCount(provider: string, marker: string): Promise<number> {
  return Number(
    await suite.db.pool.oneFirst(
      sql.unsafe`SELECT count(*)::int FROM events WHERE provider = ${provider} AND position(${marker}::bytea IN payload) > 0`,
    ),
  );
}

describe('Redis outage', () => {
  it('keeps HTTP ingestion untouched, shows the queue connection down, then reconnects and catches up', async () => {
    await bothQueues('connected', 'queue providers connected', { timeoutMs: 15_000, intervalMs: 200 });

    // Before: both sources store.
    const beforeId = await suite.redis.xadd(STREAM, '*', 'payload', '{"phase":"before"}');
    await waitFor(
      'the stream message before the outage',
      async () => ((await storedQueueIds('jobs', [beforeId ?? ''])).size === 1 ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );

    await suite.proxy.down();
    const duringIds: string[] = [];
    let load: LoadReport | undefined;
    try {
      await bothQueues('disconnected', 'list_providers to show the queue connections disconnected', {
        timeoutMs: 10_000,
        intervalMs: 100,
      });

      // Stream messages keep arriving in Redis while switchboard cannot reach it.
      for (let i = 0; i < 25; i += 1) {
        const id = await suite.redis.xadd(STREAM, '*', 'payload', JSON.stringify({ phase: 'during', i }));
        if (id !== null) duringIds.push(id);
      }
      // Published to nobody (switchboard is not subscribed right now): lost by design.
      await suite.redis.publish(CHANNEL, '{"phase":"during-outage-pubsub"}');

      // HTTP ingestion does not depend on Redis at all.
      load = await runGithubLoad({
        baseUrl: suite.child.url,
        secret: SECRET,
        concurrency: 4,
        maxRequests: 60,
        seed: 11,
      });
      const health = await fetch(`${suite.child.url}/healthz`);
      expect(health.status).toBe(200);
      await delay(1_000);
    } finally {
      await suite.proxy.up();
    }
    expect(
      load?.ok,
      load?.outcomes
        .filter((o) => o.status !== 200)
        .map((o) => `${o.status}: ${o.error}`)
        .join('; '),
    ).toBe(60);
    expect((await storedQueueIds('jobs', duringIds)).size, 'nothing could be read while Redis was unreachable').toBe(0);

    const upAt = performance.now();
    await bothQueues('connected', 'list_providers to show the queue connections connected again', {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const reconnectMs = performance.now() - upAt;

    // Streams: everything added during the outage is stored after the reconnect.
    await waitFor(
      'the stream messages added during the outage',
      async () => ((await storedQueueIds('jobs', duringIds)).size === duringIds.length ? true : undefined),
      {
        timeoutMs: 15_000,
        intervalMs: 200,
      },
    );

    // Pub/sub: subscribed again, so a message published now is stored.
    const marker = `after-reconnect-${randomBytes(4).toString('hex')}`;
    await waitFor(
      'a pub/sub message published after the reconnect',
      async () => {
        await suite.redis.publish(CHANNEL, JSON.stringify({ phase: marker }));
        return (await storedPayloadCount('pings', marker)) > 0 ? true : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 500 },
    );
    expect(
      await storedPayloadCount('pings', 'during-outage-pubsub'),
      'pub/sub is at-most-once: nothing replays the outage',
    ).toBe(0);

    expect(suite.child.isRunning()).toBe(true);
    expect(suite.child.output()).not.toMatch(/unhandledRejection|UnhandledPromiseRejection|uncaughtException/);
    console.info(
      `redis outage: 60/60 webhooks acknowledged while Redis was down; queue sources connected again ${Math.round(reconnectMs)} ms after Redis returned; ` +
        `${duringIds.length} stream messages from the outage stored`,
    );
  });
});
