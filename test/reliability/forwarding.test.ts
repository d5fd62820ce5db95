/**
 * Forwarding with real switchboard processes:
 *   - crash safety: five SIGKILLs at random moments of a signed GitHub load with a forward rule.
 *     After a restart every committed event (every github row in the database, acknowledged or
 *     not) reaches the consumer at least once, with its exact bytes: the outbox row committed with
 *     the event, and a delivery claimed by a killed instance is claimed again once its
 *     claim_timeout_ms runs out;
 *   - two instances on one database share a rule's work with FOR UPDATE SKIP LOCKED: in a run
 *     with no failures no event is delivered twice.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery, makePayload, runGithubLoad, seededRandom } from '../../bench/load-driver.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { randomToken, spawnSwitchboard, waitForExit, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { postGithubDelivery } from '../support/wire.ts';
import { waitFor } from './support/clients.ts';

const SECRET = `forward-secret-${randomBytes(8).toString('hex')}`;
const SEED = Number(process.env.CRASH_SEED ?? 20_261_203);
const token = randomToken();

const configFor = (consumer: Consumer) => ({
  providers: { github: { preset: 'github', secret: SECRET } },
  forward: {
    'local-app': {
      to: consumer.url('/webhooks'),
      concurrency: 8,
      timeout_ms: 1_000,
      // A killed instance's claims come back after 2 s instead of the default 30 s.
      claim_timeout_ms: 2_000,
      backoff: { initial_ms: 100, max_ms: 500 },
    },
  },
  rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
});

const eventIdOf = (req: RecordedRequest): string => String(req.headers['x-switchboard-replay'] ?? '');

async function storedGithub(db: TestDatabase): Promise<Map<string, Buffer>> {
  const rows = await db.pool.any(
    sql.type(z.object({ id: z.string(), payload: z.instanceof(Buffer) }))`
      SELECT id::text AS id, payload FROM events WHERE provider = 'github'`,
  );
  return new Map(rows.map((row) => [row.id, row.payload]));
}

describe('forwarding across SIGKILLs', () => {
  let db: TestDatabase;
  let consumer: Consumer;
  let child: SpawnedSwitchboard | undefined;

  beforeAll(async () => {
    db = await freshDatabase();
    consumer = await startConsumer();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await child?.exited;
    child?.cleanup();
    await consumer?.close();
    await db?.close();
  });

  it('delivers every committed event at least once after five kills and a restart', async () => {
    const random = seededRandom(SEED);
    const acknowledged = new Set<string>();
    const start = () => spawnSwitchboard({ config: configFor(consumer), databaseUrl: db.url, token, logLevel: 'warn' });
    for (let cycle = 1; cycle <= 5; cycle += 1) {
      const current = await start();
      child = current;
      const stop = new AbortController();
      let firstAck: () => void = () => undefined;
      const acked = new Promise<void>((resolve) => {
        firstAck = resolve;
      });
      const load = runGithubLoad({
        baseUrl: current.url,
        secret: SECRET,
        concurrency: 8,
        signal: stop.signal,
        seed: SEED + cycle,
        requestTimeoutMs: 10_000,
        onOutcome: (o) => {
          if (o.status === 200 && o.id !== null) {
            acknowledged.add(o.id);
            firstAck();
          }
        },
      });
      await delay(400 + Math.floor(random() * 800));
      await Promise.race([acked, delay(20_000)]);
      current.kill('SIGKILL');
      expect((await waitForExit(current, 10_000)).signal).toBe('SIGKILL');
      stop.abort();
      await load;
      current.cleanup();
    }
    expect(acknowledged.size).toBeGreaterThan(20);

    child = await start();
    const committed = await storedGithub(db);
    // Every acknowledged event is committed (ingest's own guarantee), and every committed one is forwarded.
    for (const id of acknowledged) expect(committed.has(id), `acknowledged ${id} is stored`).toBe(true);
    await waitFor(
      `all ${committed.size} committed events at the consumer`,
      () => {
        const seen = new Set(consumer.requests.map(eventIdOf));
        return [...committed.keys()].every((id) => seen.has(id)) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    for (const req of consumer.requests) {
      const stored = committed.get(eventIdOf(req));
      expect(stored?.equals(req.body), `forwarded bytes of ${eventIdOf(req)}`).toBe(true);
    }
    // One delivery row per committed event, all settled as delivered.
    const rows = await db.pool.oneFirst(
      sql.type(z.object({ n: z.coerce.number() }))`SELECT count(*) AS n FROM deliveries`,
    );
    expect(rows).toBe(committed.size);
    await waitFor(
      'every delivery row settled as delivered',
      async () =>
        (await db.pool.oneFirst(
          sql.type(z.object({ n: z.coerce.number() }))`SELECT count(*) AS n FROM deliveries WHERE state <> 'delivered'`,
        )) === 0
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  });
});

describe('two instances on one database', () => {
  let db: TestDatabase;
  let consumer: Consumer;
  let a: SpawnedSwitchboard;
  let b: SpawnedSwitchboard;

  beforeAll(async () => {
    db = await freshDatabase();
    consumer = await startConsumer();
    [a, b] = await Promise.all([
      spawnSwitchboard({ config: configFor(consumer), databaseUrl: db.url, token, logLevel: 'warn' }),
      spawnSwitchboard({ config: configFor(consumer), databaseUrl: db.url, token, logLevel: 'warn' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    a?.cleanup();
    b?.cleanup();
    await consumer?.close();
    await db?.close();
  });

  it('delivers each event once when nothing fails, whichever instance received it', async () => {
    const ids: string[] = [];
    const random = seededRandom(SEED);
    for (let n = 0; n < 120; n += 1) {
      const delivery = await makeGithubDelivery(SECRET, makePayload(random, n));
      const res = await postGithubDelivery(n % 2 === 0 ? a.url : b.url, delivery);
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    await waitFor(
      'all 120 events at the consumer',
      () => (new Set(consumer.requests.map(eventIdOf)).size === 120 ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // Both poll and both are woken by every commit; give a double delivery its chance to show.
    await delay(2_500);
    const perEvent = new Map<string, number>();
    for (const req of consumer.requests) perEvent.set(eventIdOf(req), (perEvent.get(eventIdOf(req)) ?? 0) + 1);
    expect([...perEvent.values()].filter((count) => count > 1)).toEqual([]);
    expect(new Set(perEvent.keys())).toEqual(new Set(ids));
    expect(consumer.requests.every((req) => req.headers['x-switchboard-attempt'] === '1')).toBe(true);
  });
});
