/**
 * A claim is a lease: while its attempt is in flight (sending, or waiting to be settled) the
 * dispatcher that holds it keeps extending it, so a second dispatcher on the same database never
 * sends the same delivery again because the first one was slow. Two dispatchers, a real
 * PostgreSQL and a consumer on 127.0.0.1 that answers only after the claim timeout.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardRuleMatcher } from '../../src/config/forward-rules.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import { startForwardDispatcher, type ForwardDispatcher } from '../../src/forward/forward-dispatcher.ts';
import { createOutbound } from '../../src/outbound/deliver-event.ts';
import { openClaimConnection } from '../../src/store/outbox/claim-connection.ts';
import { createDeliveryRepository } from '../../src/store/outbox/delivery-repository.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, silentLogger, type TestDatabase } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { eventually } from './forward-kit.ts';

const CLAIM_TIMEOUT_MS = 1_000;
/** The consumer's answer comes this long after the request: well past the claim timeout. */
const ANSWER_AFTER_MS = 2_600;

let db: TestDatabase;
let consumer: Consumer;

beforeAll(async () => {
  db = await freshDatabase();
  consumer = await startConsumer();
  consumer.handle((_req, res) => {
    setTimeout(() => res.end('ok'), ANSWER_AFTER_MS);
  });
});
afterAll(async () => {
  await consumer?.close();
  await db?.close();
});

const attemptRows = z.object({ id: z.string(), state: z.string(), attempts: z.number() });

describe('a claim held while its attempt is in flight', () => {
  it('is sent exactly once by two dispatchers when the consumer answers after the claim timeout', async () => {
    const [configured] = parseConfig(
      `forward:\n  slow: { to: "${consumer.url()}", concurrency: 4, resign: false, timeout_ms: 500, claim_timeout_ms: ${CLAIM_TIMEOUT_MS} }\n`,
      {},
    ).forward;
    if (configured === undefined) throw new Error('no rule');
    // The config keeps claim_timeout_ms above timeout_ms; a send that outlives its claim stands
    // here for any delay between claim and settle (a stalled event loop, a slow database under load).
    const rule = { ...configured, timeoutMs: 10_000 };
    const matcher = forwardRuleMatcher([rule]);
    if (matcher === undefined) throw new Error('no matcher');
    const stored = await createEventStore(db.pool, { forwardRulesFor: matcher }).insertMany(
      Array.from({ length: 6 }, () => newEvent()),
    );
    const eventIds = stored.map((s) => s.event.id);

    // Two instances: each its own dispatcher and its own claim connections.
    const connections = [0, 1].map(() => openClaimConnection(db.url, { logger: silentLogger }));
    const dispatchers: ForwardDispatcher[] = connections.map((claims) =>
      startForwardDispatcher({
        rules: [rule],
        targets: new Map([[rule.name, new URL(rule.to)]]),
        deliveries: createDeliveryRepository(db.pool, claims),
        outbound: createOutbound({ providers: [], allow: [], selfAddresses: () => [], logger: silentLogger }),
        subscribe: () => () => undefined,
        logger: silentLogger,
        pollIntervalMs: 100,
      }),
    );
    try {
      const rows = () =>
        db.pool.any(sql.type(attemptRows)`
          SELECT d.id, d.state,
            (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
          FROM deliveries d ORDER BY d.seq
        `);
      await eventually(
        async () => (await rows()).every((row) => row.state === 'delivered'),
        'every delivery settled',
        20_000,
      );
      // Twice the claim timeout more: a delivery left to expire would have been sent again by now.
      await delay(2 * CLAIM_TIMEOUT_MS + ANSWER_AFTER_MS);
      const sends = new Map<string, number>();
      for (const req of consumer.requests) {
        const id = String(req.headers['x-switchboard-replay'] ?? '');
        sends.set(id, (sends.get(id) ?? 0) + 1);
      }
      expect(eventIds.map((id) => sends.get(id) ?? 0)).toEqual(eventIds.map(() => 1));
      // One attempt each. (Its number may have skipped one: a claim whose statement came back after
      // its lease ran out is not sent, and the next claim counts on from it.)
      expect((await rows()).map((row) => [row.state, row.attempts])).toEqual(eventIds.map(() => ['delivered', 1]));
    } finally {
      await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop(0)));
      await Promise.all(connections.map((claims) => claims.close()));
    }
  });
});
