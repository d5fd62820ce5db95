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
import { beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery, makePayload, seededRandom } from '../../bench/load-driver.ts';
import type { TestDatabase } from '../support/database.ts';
import { randomToken, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { postGithubDelivery } from '../support/wire.ts';
import { waitFor } from './support/clients.ts';
import { UNHURRIED_CLAIM_TIMEOUT_MS, eventIdOf, forwardingConfig } from './support/forward-rule.ts';
import { killUnderLoad } from './support/kill-under-load.ts';
import { reliabilitySuite } from './support/suite.ts';

const SECRET = `forward-secret-${randomBytes(8).toString('hex')}`;
const SEED = Number(process.env.CRASH_SEED ?? 20_261_203);
const token = randomToken();

async function storedGithub(db: TestDatabase): Promise<Map<string, Buffer>> {
  const rows = await db.pool.any(
    sql.type(z.object({ id: z.string(), payload: z.instanceof(Buffer) }))`
      SELECT id::text AS id, payload FROM events WHERE provider = 'github'`,
  );
  return new Map(rows.map((row) => [row.id, row.payload]));
}

describe('forwarding across SIGKILLs', () => {
  const suite = reliabilitySuite({ consumer: true, end: 'kill' });

  it('delivers every committed event at least once after five kills and a restart', async () => {
    const { db, consumer } = suite;
    const random = seededRandom(SEED);
    const acknowledged = new Set<string>();
    const start = () => suite.spawn({ config: forwardingConfig(consumer, SECRET), token, logLevel: 'warn' });
    for (let cycle = 1; cycle <= 5; cycle += 1) {
      const current = await start();
      const { exit } = await killUnderLoad(current, {
        secret: SECRET,
        concurrency: 8,
        seed: SEED + cycle,
        requestTimeoutMs: 10_000,
        killAfterMs: 400 + Math.floor(random() * 800),
        onOutcome: (o) => {
          if (o.status === 200 && o.id !== null) acknowledged.add(o.id);
        },
      });
      expect(exit.signal).toBe('SIGKILL');
      current.cleanup();
    }
    expect(acknowledged.size).toBeGreaterThan(20);

    await start();
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
  const suite = reliabilitySuite({ consumer: true });
  let a: SpawnedSwitchboard;
  let b: SpawnedSwitchboard;

  beforeAll(async () => {
    const config = forwardingConfig(suite.consumer, SECRET, UNHURRIED_CLAIM_TIMEOUT_MS);
    [a, b] = await Promise.all([
      suite.spawn({ config, token, logLevel: 'warn' }),
      suite.spawn({ config, token, logLevel: 'warn' }),
    ]);
  });

  it('delivers each event once when nothing fails, whichever instance received it', async () => {
    const { consumer } = suite;
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
