/**
 * Roles (`switchboard serve --role`): one ingest process and two worker processes, real child
 * processes on one PostgreSQL, a loopback consumer.
 *   - with nothing failing, every event posted to the ingest process reaches the consumer exactly
 *     once, sent by the workers only (the ingest process sends nothing), and the workers index
 *     every event for search; /healthz on each says its role, and a worker serves no webhook,
 *     /api or /mcp route;
 *   - a worker SIGKILLed in the middle of a load loses nothing: what it had claimed is taken over
 *     by the other worker once claim_timeout_ms runs out, and every event is delivered.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery, makePayload, runGithubLoad, seededRandom } from '../../bench/load-driver.ts';
import { randomToken, waitForExit, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { postGithubDelivery } from '../support/wire.ts';
import { waitFor } from './support/clients.ts';
import { CLAIM_TIMEOUT_MS, UNHURRIED_CLAIM_TIMEOUT_MS, eventIdOf, forwardingConfig } from './support/forward-rule.ts';
import { reliabilitySuite, type ReliabilitySuite } from './support/suite.ts';

const SECRET = `roles-secret-${randomBytes(8).toString('hex')}`;
const SEED = 20_261_204;
const token = randomToken();

const count = z.object({ n: z.coerce.number() });

/** The forward attempts a process made, from its own /metrics. */
async function attemptsMadeBy(child: SpawnedSwitchboard): Promise<number> {
  const response = await fetch(`${child.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  const text = await response.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('switchboard_forward_deliveries_total{'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

async function startRoles(suite: ReliabilitySuite, claimTimeoutMs = CLAIM_TIMEOUT_MS) {
  const spawn = (role: string) =>
    suite.spawn({
      config: forwardingConfig(suite.consumer, SECRET, claimTimeoutMs),
      token,
      logLevel: 'warn',
      extraArgs: ['--role', role],
    });
  const [ingest, workerA, workerB] = await Promise.all([spawn('ingest'), spawn('worker'), spawn('worker')]);
  return { ingest, workerA, workerB };
}

describe('one ingest and two workers on one database', () => {
  const suite = reliabilitySuite({ consumer: true });
  let ingest: SpawnedSwitchboard;
  let workers: SpawnedSwitchboard[];

  beforeAll(async () => {
    const started = await startRoles(suite, UNHURRIED_CLAIM_TIMEOUT_MS);
    ingest = started.ingest;
    workers = [started.workerA, started.workerB];
  });

  it('/healthz reports each process’s role, and a worker serves no webhook, /api or /mcp route', async () => {
    const health = async (child: SpawnedSwitchboard) => (await fetch(`${child.url}/healthz`)).json();
    expect(await health(ingest)).toEqual({ status: 'ok', role: 'ingest' });
    for (const worker of workers) expect(await health(worker)).toEqual({ status: 'ok', role: 'worker' });
    const worker = workers[0] as SpawnedSwitchboard;
    const delivery = await makeGithubDelivery(SECRET, makePayload(seededRandom(1), 1));
    expect((await postGithubDelivery(worker.url, delivery)).status).toBe(404);
    const api = await fetch(`${worker.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
    expect(api.status).toBe(404);
    const mcp = await fetch(worker.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(mcp.status).toBe(404);
    expect(worker.output()).toContain('role:     worker');
  });

  it('delivers every event exactly once when nothing fails, sent by the workers only, and indexes each', async () => {
    const { db, consumer } = suite;
    const random = seededRandom(SEED);
    const ids: string[] = [];
    // A few at a time, so deliveries overlap and both workers claim while others are in flight.
    for (let n = 0; n < 200; n += 8) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const delivery = await makeGithubDelivery(SECRET, makePayload(random, n + i));
          const res = await postGithubDelivery(ingest.url, delivery);
          expect(res.status).toBe(200);
          return ((await res.json()) as { id: string }).id;
        }),
      );
      ids.push(...batch);
    }
    await waitFor(
      'all 200 events at the consumer',
      () => (new Set(consumer.requests.map(eventIdOf)).size === ids.length ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // Every worker polls and every commit wakes both: give a double delivery its chance to show.
    await delay(2_500);
    const perEvent = new Map<string, number>();
    for (const req of consumer.requests) perEvent.set(eventIdOf(req), (perEvent.get(eventIdOf(req)) ?? 0) + 1);
    expect([...perEvent.entries()].filter(([, times]) => times > 1)).toEqual([]);
    expect(new Set(perEvent.keys())).toEqual(new Set(ids));
    expect(consumer.requests.every((req) => req.headers['x-switchboard-attempt'] === '1')).toBe(true);

    // The ingest process sent nothing; the workers' attempts add up to the deliveries.
    expect(await attemptsMadeBy(ingest)).toBe(0);
    const byWorker = await Promise.all(workers.map(attemptsMadeBy));
    expect(byWorker.reduce((a, b) => a + b, 0)).toBe(ids.length);

    // Search indexing ran on the workers: the queue empties and every event has one search row.
    await waitFor(
      'the search queue drained by the workers',
      async () =>
        (await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM event_search_queue`)) === 0
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const events = await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM events`);
    expect(await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM event_search`)).toBe(events);
  });
});

describe('a worker killed in the middle of a load', () => {
  const suite = reliabilitySuite({ consumer: true, end: 'kill' });

  beforeAll(() => {
    // A consumer slow enough that both workers are saturated (8 in flight each answers about 53
    // a second, the load posts 150): the worker killed is then surely holding claims when it dies.
    // At 40 ms a worker could have nothing in flight at the kill, and the test had nothing to check.
    suite.consumer.handle((_req, res) => {
      setTimeout(() => res.end('ok'), 150);
    });
  });

  it('loses nothing: its claims are taken over by the other worker once claim_timeout_ms runs out', async () => {
    const { db, consumer } = suite;
    const { ingest, workerA } = await startRoles(suite);
    const acknowledged = new Set<string>();
    const stop = new AbortController();
    const load = runGithubLoad({
      baseUrl: ingest.url,
      secret: SECRET,
      concurrency: 4,
      ratePerSecond: 150,
      signal: stop.signal,
      seed: SEED,
      requestTimeoutMs: 10_000,
      onOutcome: (o) => {
        if (o.status === 200 && o.id !== null) acknowledged.add(o.id);
      },
    });
    // Both workers must hold claims at the kill; a worker claims ahead of its sends, so one can take
    // every due row for a moment: wait for the two claims, not a count of requests.
    await waitFor(
      'both workers delivering',
      async () => {
        if (consumer.requests.length < 60) return undefined;
        const claims = await db.pool.oneFirst(
          sql.type(count)`SELECT count(DISTINCT claim) AS n FROM deliveries WHERE state = 'delivering'`,
        );
        return claims >= 2 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    workerA.kill('SIGKILL');
    expect((await waitForExit(workerA, 10_000)).signal).toBe('SIGKILL');
    const killedAt = Date.now();
    // What the dead worker held is still "delivering" under its claim, not lost. Each worker claims
    // under an id of its own, so the rows in flight group by worker.
    const inFlight = await db.pool.any(
      sql.type(z.object({ id: z.string(), claim: z.string() }))`
        SELECT id::text AS id, claim::text AS claim FROM deliveries WHERE state = 'delivering'`,
    );
    const heldBy = new Map<string, string[]>();
    for (const row of inFlight) heldBy.set(row.claim, [...(heldBy.get(row.claim) ?? []), row.id]);
    expect(heldBy.size, 'both workers were holding claims when one was killed').toBe(2);
    const held = inFlight.map((row) => row.id);
    await delay(1_500);
    stop.abort();
    await load;
    expect(acknowledged.size).toBeGreaterThan(100);

    await waitFor(
      `all ${acknowledged.size} acknowledged events at the consumer`,
      () => {
        const seen = new Set(consumer.requests.map(eventIdOf));
        return [...acknowledged].every((id) => seen.has(id)) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await waitFor(
      'every delivery settled as delivered',
      async () =>
        (await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM deliveries WHERE state <> 'delivered'`)) === 0
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const events = await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM events WHERE provider = 'github'`);
    expect(await db.pool.oneFirst(sql.type(count)`SELECT count(*) AS n FROM deliveries`)).toBe(events);

    // The claims the dead worker held were taken over, as second attempts, after its claim timed
    // out and soon after: within claim_timeout_ms plus the survivor's 1 s poll and some slack.
    const takenOver = consumer.requests.filter((req) => req.headers['x-switchboard-attempt'] === '2');
    const retried = new Set(takenOver.map((req) => String(req.headers['x-switchboard-delivery'])));
    // The dead worker's claims, every one of them, were sent again; the survivor settled its own.
    const wholeGroupsRetried = [...heldBy.values()].filter((ids) => ids.every((id) => retried.has(id)));
    expect(wholeGroupsRetried).toHaveLength(1);
    const lastTakeover = await db.pool.oneFirst(
      sql.type(z.object({ ms: z.coerce.number() }))`
        SELECT coalesce(max(extract(epoch FROM started_at) * 1000), 0) AS ms FROM delivery_attempts
        WHERE attempt = 2 AND delivery_id = ANY(${sql.array(held, 'uuid')})`,
    );
    expect(lastTakeover - killedAt).toBeLessThan(CLAIM_TIMEOUT_MS + 3_000);
  });
});
