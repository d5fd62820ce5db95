/**
 * DeliveryRepository.deadInterruptedReplies, on the database: a reply attempt written claimed with
 * no lease (reply without retry) that is older than the bound becomes dead with an `interrupted:`
 * attempt; a recent one (its reply may still be running), one with a lease (reply.retry: the
 * outbox takes it back) and an ordinary queued delivery are left alone. The whole path, with a
 * killed process, is test/reliability/reply-crash.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { ReplyDelivery } from '../../src/store/events/event-store.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { newEvent } from '../support/events.ts';
import { deliveryStoreFixture } from './delivery-store-fixture.ts';

const fixture = deliveryStoreFixture();

const reply = (leaseMs: number | null): ReplyDelivery => ({ id: uuidv7(), rule: 'bot', claim: randomUUID(), leaseMs });

describe('deadInterruptedReplies', () => {
  it('makes only old lease-less reply attempts dead, with an interrupted attempt', async () => {
    const { db, deliveries } = fixture;
    const store = createEventStore(db.pool, { forwardRulesFor: () => ['bot'] });
    const interrupted = reply(null);
    const leased = reply(60_000);
    await store.insert(newEvent({ replyDelivery: interrupted }));
    await store.insert(newEvent({ replyDelivery: leased }));
    await store.insert(newEvent());
    const state = (id: string) =>
      db.pool.oneFirst(sql.type(z.object({ state: z.string() }))`SELECT state FROM deliveries WHERE id = ${id}`);

    // Younger than the bound: its reply may still be running.
    expect(await deliveries.deadInterruptedReplies(60_000)).toEqual(new Map());
    expect(await state(interrupted.id)).toBe('delivering');

    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await deliveries.deadInterruptedReplies(1)).toEqual(new Map([['bot', 1]]));
    expect(await state(interrupted.id)).toBe('dead');
    expect(await state(leased.id)).toBe('delivering');
    const states = await db.pool.anyFirst(
      sql.type(z.object({ state: z.string() }))`SELECT state FROM deliveries ORDER BY state`,
    );
    expect(states).toEqual(['dead', 'delivering', 'pending']);
    const [attempt] = await deliveries.forEvent(
      await db.pool.oneFirst(
        sql.type(
          z.object({ id: z.string() }),
        )`SELECT event_id::text AS id FROM deliveries WHERE id = ${interrupted.id}`,
      ),
    );
    expect(attempt).toMatchObject({ state: 'dead', attempt_count: 1 });
    const errors = await db.pool.anyFirst(
      sql.type(z.object({ error: z.string().nullable() }))`SELECT error FROM delivery_attempts`,
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^interrupted:/);
    // Once dead, a second start-up finds nothing more.
    expect(await deliveries.deadInterruptedReplies(1)).toEqual(new Map());
  });
});
