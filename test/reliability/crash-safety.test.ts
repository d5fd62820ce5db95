/**
 * Crash safety: a switchboard child process under a load of signed GitHub deliveries is killed
 * with SIGKILL at a random moment, 20 times. SIGKILL skips every shutdown path, so whatever
 * survives is what was committed before the 2xx went out. After each restart:
 *   - every delivery that was answered 2xx, in this cycle or any earlier one, is stored with
 *     exactly the bytes that were sent (checked in the database for all of them, and through the
 *     restarted server's /api/events/:id/raw for a sample);
 *   - no stored row is torn or foreign: each stored github row is one of the deliveries sent,
 *     with that delivery's exact bytes (requests that got no answer may or may not be stored;
 *     they are not counted as lost).
 * Meanwhile messages are XADDed to a Redis stream read by a `mode: streams` queue provider;
 * after the last restart every one of them is stored (at least once; the unique external id,
 * the stream entry id, makes it exactly one row each) with its exact bytes.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { seededRandom, type DeliveryOutcome, type GithubDelivery } from '../../bench/load-driver.ts';
import { randomToken, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { waitFor } from './support/clients.ts';
import { killUnderLoad } from './support/kill-under-load.ts';
import { REDIS_URL, reliabilitySuite } from './support/suite.ts';

const CYCLES = 20;
const SEED = Number(process.env.CRASH_SEED ?? 20_240_817);
const SECRET = `crash-secret-${randomBytes(8).toString('hex')}`;
const STREAM = `switchboard-crash-${randomBytes(6).toString('hex')}`;
const GROUP = 'switchboard';

const token = randomToken();

const config = {
  providers: {
    github: { preset: 'github', secret: SECRET },
    jobs: { family: 'queue', channel: STREAM, mode: 'streams' },
  },
  // The sample read-back below must not be throttled.
  rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
};

const suite = reliabilitySuite({ redis: { deleteAfter: [STREAM] }, end: 'kill' });

function start(): Promise<SpawnedSwitchboard> {
  return suite.spawn({ config, token, redisUrl: REDIS_URL, logLevel: 'warn' });
}

/** XADDs one message every few milliseconds until the signal aborts; returns the entry ids and bytes. */
async function produce(signal: AbortSignal, sent: Map<string, Buffer>, next: () => number): Promise<void> {
  while (!signal.aborted) {
    const n = next();
    const payload = Buffer.from(JSON.stringify({ type: 'job.created', n, note: `stream message ${n} ✓` }), 'utf8');
    const id = await suite.redis.xadd(STREAM, '*', 'payload', payload, 'n', String(n));
    if (id !== null) sent.set(id, payload);
    await delay(4);
  }
}

async function storedPayloads(ids: readonly string[]): Promise<Map<string, Buffer>> {
  const rows = await suite.db.pool.any(
    sql.type(
      z.object({ id: z.string(), payload: z.instanceof(Buffer) }),
    )`SELECT id::text AS id, payload FROM events WHERE id = ANY(${sql.array([...ids], 'uuid')})`,
  );
  return new Map(rows.map((row) => [String(row.id), row.payload]));
}

describe('crash safety under SIGKILL', () => {
  it(`keeps every acknowledged delivery and every stream message across ${CYCLES} kills`, async () => {
    const random = seededRandom(SEED);
    /** event id → the bytes of the delivery acknowledged with it. */
    const acknowledged = new Map<string, Buffer>();
    /** delivery id → the delivery, for every request sent (answered or not). */
    const sentDeliveries = new Map<string, GithubDelivery>();
    const streamSent = new Map<string, Buffer>();
    let streamCounter = 0;
    const totals = { sent: 0, ok: 0, non2xx: 0, failed: 0 };
    const cycleLog: string[] = [];

    let child = await start();
    // The queue source creates its consumer group at `$`; anything added before that would be
    // (correctly) not its to read. Wait for the group before producing.
    await waitFor(
      'the stream consumer group',
      async () => {
        const groups = (await suite.redis.xinfo('GROUPS', STREAM).catch(() => [])) as unknown[];
        return groups.length > 0 ? true : undefined;
      },
      { timeoutMs: 20_000 },
    );

    for (let cycle = 1; cycle <= CYCLES; cycle += 1) {
      const current = child;
      // ~0.5–1.5 s of load, killed at a random moment inside it.
      const killAfterMs = 500 + Math.floor(random() * 1000);
      const stopProducing = new AbortController();
      const producing = produce(stopProducing.signal, streamSent, () => (streamCounter += 1));
      const { exit, report } = await killUnderLoad(current, {
        secret: SECRET,
        concurrency: 16,
        seed: SEED + cycle,
        requestTimeoutMs: 10_000,
        killAfterMs,
        onOutcome: (o: DeliveryOutcome) => {
          sentDeliveries.set(o.delivery.deliveryId, o.delivery);
        },
      });
      expect(exit.signal).toBe('SIGKILL');
      stopProducing.abort();
      await producing;
      current.cleanup();

      const cycleAcked: string[] = [];
      for (const outcome of report.outcomes) {
        if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) {
          expect(outcome.id, 'a 2xx carries the event id').toMatch(/^[0-9a-f-]{36}$/);
          acknowledged.set(outcome.id ?? '', outcome.delivery.body);
          cycleAcked.push(outcome.id ?? '');
        } else if (outcome.status !== null) {
          // An answer other than 2xx is allowed only as the documented 503 (the database did not
          // confirm in time); a 4xx or 500 would mean a valid delivery was refused.
          expect(outcome.status, outcome.error ?? '').toBe(503);
        }
      }
      totals.sent += report.sent;
      totals.ok += report.ok;
      totals.non2xx += report.non2xx;
      totals.failed += report.failed;
      cycleLog.push(
        `cycle ${cycle}: killed after ${killAfterMs} ms, ${report.ok} acked, ${report.failed} unanswered, ${report.non2xx} non-2xx`,
      );
      expect(report.ok, `cycle ${cycle} acknowledged nothing: the load did not reach the server`).toBeGreaterThan(0);

      child = await start();

      // Every delivery acknowledged so far, byte for byte, in the database.
      const stored = await storedPayloads([...acknowledged.keys()]);
      const missing = [...acknowledged.keys()].filter((id) => !stored.has(id));
      expect(missing, `cycle ${cycle}: acknowledged but not stored`).toEqual([]);
      const changed = [...acknowledged].filter(([id, body]) => !stored.get(id)?.equals(body)).map(([id]) => id);
      expect(changed, `cycle ${cycle}: stored bytes differ from the bytes sent`).toEqual([]);

      // And through the restarted server, for a sample of this cycle's.
      for (const id of cycleAcked
        .filter((_, i) => i % Math.max(1, Math.floor(cycleAcked.length / 5)) === 0)
        .slice(0, 5)) {
        const response = await fetch(`${child.url}/api/events/${id}/raw`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(response.status).toBe(200);
        expect(Buffer.from(await response.arrayBuffer()).equals(acknowledged.get(id) ?? Buffer.alloc(0))).toBe(true);
      }
    }

    // No torn or foreign rows: every stored github row is a delivery that was sent, with its bytes.
    const rows = await suite.db.pool.any(
      sql.type(
        z.object({ external_id: z.string().nullable(), payload: z.instanceof(Buffer), verified: z.boolean() }),
      )`SELECT external_id, payload, verified FROM events WHERE provider = 'github'`,
    );
    for (const row of rows) {
      const delivery = sentDeliveries.get(String(row.external_id));
      expect(delivery, `stored row for unknown delivery ${String(row.external_id)}`).toBeDefined();
      expect(row.payload.equals(delivery?.body ?? Buffer.alloc(0))).toBe(true);
      expect(row.verified).toBe(true);
    }
    expect(rows.length).toBeGreaterThanOrEqual(acknowledged.size);

    // Every XADDed message is stored after the last restart: pending entries of the killed
    // consumers are re-read, and the entry id (the external id) keeps them to one row each.
    const streamIds = [...streamSent.keys()];
    await waitFor(
      'every stream message to be stored',
      async () => {
        const count = await suite.db.pool.oneFirst(
          sql.type(
            z.object({ count: z.number() }),
          )`SELECT count(*)::int FROM events WHERE provider = 'jobs' AND external_id = ANY(${sql.array(streamIds, 'text')})`,
        );
        return Number(count) === streamIds.length ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const streamRows = await suite.db.pool.any(
      sql.type(
        z.object({ external_id: z.string().nullable(), payload: z.instanceof(Buffer) }),
      )`SELECT external_id, payload FROM events WHERE provider = 'jobs' AND external_id = ANY(${sql.array(streamIds, 'text')})`,
    );
    expect(streamRows).toHaveLength(streamIds.length);
    for (const row of streamRows) {
      expect(row.payload.equals(streamSent.get(String(row.external_id)) ?? Buffer.alloc(0))).toBe(true);
    }
    // Nothing left unacknowledged in the group once everything is stored.
    await waitFor(
      'the consumer group to have no pending entries',
      async () => {
        const pending = (await suite.redis.xpending(STREAM, GROUP)) as [number, ...unknown[]];
        return pending[0] === 0 ? true : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 250 },
    );

    console.info(
      [
        `crash safety (seed ${SEED}): ${CYCLES} SIGKILLs, ${totals.sent} deliveries sent, ${totals.ok} acknowledged (all stored byte-identical), ` +
          `${totals.failed} unanswered, ${totals.non2xx} non-2xx; ${streamIds.length} stream messages, all stored once`,
        ...cycleLog,
      ].join('\n'),
    );
  }, 300_000);
});
