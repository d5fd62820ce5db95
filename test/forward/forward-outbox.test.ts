/**
 * The outbox and its repository on a real database: delivery rows are written with their event
 * (and only for matching rules), go with it under retention, are claimed once across claimers,
 * come back when a claim expires, and back off with full jitter.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { forwardRuleMatcher, ruleTakes } from '../../src/config/forward-rules.ts';
import { ConfigError } from '../../src/config/config-error.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import { nextAttemptDelayMs } from '../../src/forward/backoff.ts';
import { backoffDelayMs } from '../../src/shared/backoff.ts';
import { retryAfterMs } from '../../src/shared/retry-after.ts';
import type { ClaimConnection } from '../../src/store/outbox/claim-connection.ts';
import { createDeliveryRepository } from '../../src/store/outbox/delivery-repository.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { startRetention } from '../../src/store/partitions/retention.ts';
import { silentLogger } from '../support/database.ts';
import { newEvent } from '../support/events.ts';
import { deliveryStoreFixture } from '../store/delivery-store-fixture.ts';

const { forward: rules } = parseConfig(
  'forward:\n  all: { to: "http://127.0.0.1:1/a" }\n  issues: { to: "http://127.0.0.1:1/b", event_types: [issues] }\n',
  {},
);

const fixture = deliveryStoreFixture();

/** An event store that writes a delivery for each of `rules` an inserted event matches. */
function forwardingStore() {
  const matcher = forwardRuleMatcher(rules);
  if (!matcher) throw new Error('no matcher');
  return createEventStore(fixture.db.pool, { forwardRulesFor: matcher });
}

const count = (table: 'deliveries' | 'delivery_attempts') =>
  fixture.db.pool.oneFirst(
    sql.type(z.object({ n: z.coerce.number() }))`SELECT count(*) AS n FROM ${sql.identifier([table])}`,
  );

describe('forward rules in the config', () => {
  it('fills every default from the schema and matches by provider, type family and check outcome', () => {
    const config = parseConfig(
      'providers:\n  github: { preset: github, secret: s }\nforward:\n  local-app: { to: "http://127.0.0.1:3000/webhooks", providers: [github], event_types: [push, issues.opened] }\n',
      {},
    );
    const [rule] = config.forward;
    expect(rule).toEqual({
      name: 'local-app',
      to: 'http://127.0.0.1:3000/webhooks',
      providers: ['github'],
      eventTypes: ['push', 'issues.opened'],
      includeUnverified: false,
      resign: true,
      timeoutMs: 10_000,
      maxAttempts: 12,
      concurrency: 16,
      ordered: false,
      backoff: { initialMs: 1_000, maxMs: 600_000 },
      claimTimeoutMs: 30_000,
    });
    if (!rule) throw new Error('no rule');
    const event = { provider: 'github', trustMode: 'signed' as const, verified: true };
    expect(ruleTakes(rule, { ...event, eventType: 'push' })).toBe(true);
    expect(ruleTakes(rule, { ...event, eventType: 'push.x' })).toBe(true);
    expect(ruleTakes(rule, { ...event, eventType: 'issues.opened' })).toBe(true);
    expect(ruleTakes(rule, { ...event, eventType: 'issues.closed' })).toBe(false);
    expect(ruleTakes(rule, { ...event, eventType: 'pushed' })).toBe(false);
    expect(ruleTakes(rule, { ...event, eventType: 'push', verified: false })).toBe(false);
    expect(ruleTakes(rule, { ...event, provider: 'stripe', eventType: 'push' })).toBe(false);
    expect(ruleTakes({ ...rule, includeUnverified: true }, { ...event, eventType: 'push', verified: false })).toBe(
      true,
    );
    expect(forwardRuleMatcher([])).toBeUndefined();
  });

  it('refuses rule names, unknown providers and inconsistent timings as config errors naming the rule', () => {
    const bad = (forward: string, message: RegExp) =>
      expect(() =>
        parseConfig(`providers:\n  github: { preset: github, secret: s }\nforward:\n${forward}\n`, {}),
      ).toThrow(message);
    bad('  Local App: { to: "http://127.0.0.1:1/" }', /forward/);
    bad('  a: { to: "http://127.0.0.1:1/", providers: [gitlab] }', /forward\.a\.providers: no provider named gitlab/);
    bad('  a: { to: "http://127.0.0.1:1/", backoff: { initial_ms: 5000, max_ms: 100 } }', /forward\.a\.backoff/);
    bad(
      '  a: { to: "http://127.0.0.1:1/", timeout_ms: 30000, claim_timeout_ms: 30000 }',
      /forward\.a\.claim_timeout_ms/,
    );
    expect(() => parseConfig('forward:\n  a: { to: "http://127.0.0.1:1/", retries: 3 }\n', {})).toThrow(ConfigError);
  });
});

describe('the outbox', () => {
  it('writes a delivery per matching rule in the event insert, and none for a duplicate or without rules', async () => {
    const store = forwardingStore();
    const [issue, push, again] = await store.insertMany([
      newEvent({ eventType: 'issues.opened', externalId: 'd-1' }),
      newEvent({ eventType: 'push', externalId: 'd-2' }),
      newEvent({ eventType: 'issues.opened', externalId: 'd-1' }),
    ]);
    expect(again?.duplicate).toBe(true);
    expect(
      (await fixture.deliveries.forEvent(issue?.event.id ?? '')).map((d) => [d.rule, d.state, d.attempt_count]),
    ).toEqual([
      ['all', 'pending', 0],
      ['issues', 'pending', 0],
    ]);
    expect((await fixture.deliveries.forEvent(push?.event.id ?? '')).map((d) => d.rule)).toEqual(['all']);
    // A provider's retry stored later queues nothing new.
    await store.insertMany([newEvent({ eventType: 'issues.opened', externalId: 'd-1' })]);
    expect(await count('deliveries')).toBe(3);
    // Without rules the store is the plain one: nothing queued.
    await createEventStore(fixture.db.pool).insertMany([newEvent()]);
    expect(await count('deliveries')).toBe(3);
  });

  it('deletes deliveries and attempts with their event (retention)', async () => {
    const store = forwardingStore();
    await store.insertMany([newEvent({ eventType: 'issues.opened' })]);
    const [claimed] = await fixture.deliveries.claim({
      rule: 'all',
      limit: 1,
      claimTimeoutMs: 30_000,
      ordered: false,
      claim: crypto.randomUUID(),
    });
    if (!claimed) throw new Error('nothing claimed');
    await fixture.deliveries.settle(
      claimed,
      { startedAt: new Date(), status: 500, ms: 3, error: 'consumer answered 500', excerpt: null, contentType: null },
      { state: 'failed', retryInMs: 60_000 },
    );
    expect(await count('delivery_attempts')).toBe(1);
    const job = startRetention({
      pool: fixture.db.pool,
      config: { interval_seconds: 3_600, max_events: 1 },
      logger: silentLogger,
      initialDelayMs: 3_600_000,
    });
    await store.insertMany([newEvent({ eventType: 'push' })]);
    await job.runOnce();
    await job.stop();
    expect(await count('delivery_attempts')).toBe(0);
    expect(await count('deliveries')).toBe(1);
  });

  it('claims each due delivery once across concurrent claimers, and again after its claim expires', async () => {
    const store = forwardingStore();
    await store.insertMany(Array.from({ length: 40 }, () => newEvent({ eventType: 'push' })));
    const claim = (id: string) =>
      fixture.deliveries.claim({ rule: 'all', limit: 7, claimTimeoutMs: 1_000, ordered: false, claim: id });
    const rounds = await Promise.all(Array.from({ length: 8 }, () => claim(crypto.randomUUID())));
    const ids = rounds.flat().map((d) => d.id);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    expect(rounds.flat().every((d) => d.attempt === 1)).toBe(true);
    expect(await claim(crypto.randomUUID())).toEqual([]);
    // The claimer "died": after claim_timeout_ms another claims the same rows, as attempt 2.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const again = await fixture.deliveries.claim({
      rule: 'all',
      limit: 100,
      claimTimeoutMs: 1_000,
      ordered: false,
      claim: crypto.randomUUID(),
    });
    expect(again).toHaveLength(40);
    expect(again.every((d) => d.attempt === 2)).toBe(true);
    // The expired claim can no longer settle a row.
    const stale = rounds.flat()[0];
    if (!stale) throw new Error('no stale claim');
    await fixture.deliveries.settle(
      stale,
      { startedAt: new Date(), status: 200, ms: 1, error: null, excerpt: null, contentType: null },
      { state: 'delivered' },
    );
    expect((await fixture.deliveries.get(stale.id))?.state).toBe('delivering');
  });

  it('claims only the head of an ordered rule, and nothing while it is in flight', async () => {
    const store = forwardingStore();
    const stored = await store.insertMany(Array.from({ length: 3 }, () => newEvent({ eventType: 'push' })));
    const ordered = (claim: string) =>
      fixture.deliveries.claim({ rule: 'all', limit: 5, claimTimeoutMs: 30_000, ordered: true, claim });
    const [head] = await ordered(crypto.randomUUID());
    expect(head?.eventId).toBe(stored[0]?.event.id);
    expect(await ordered(crypto.randomUUID())).toEqual([]);
  });

  it('brings each claimed event with the claim: the same stored bytes and headers a read would', async () => {
    const store = forwardingStore();
    await store.insertMany([
      newEvent({ eventType: 'push', payload: Buffer.from([0x7b, 0x00, 0xff, 0x7d]) }),
      newEvent({ eventType: 'push', headers: { 'x-github-event': 'push', 'x-many': ['a', 'b'] } }),
    ]);
    const claimed = await fixture.deliveries.claim({
      rule: 'all',
      limit: 10,
      claimTimeoutMs: 30_000,
      ordered: false,
      claim: crypto.randomUUID(),
    });
    expect(claimed).toHaveLength(2);
    for (const delivery of claimed) {
      expect(delivery.event.id).toBe(delivery.eventId);
      expect(delivery.event).toEqual(await store.get(delivery.eventId));
    }
  });

  it('settles a batch in one statement: every attempt recorded, each delivery moved on, a stale claim left alone', async () => {
    const store = forwardingStore();
    await store.insertMany(Array.from({ length: 4 }, () => newEvent({ eventType: 'push' })));
    const claim = crypto.randomUUID();
    const [a, b, c, d] = await fixture.deliveries.claim({
      rule: 'all',
      limit: 4,
      claimTimeoutMs: 30_000,
      ordered: false,
      claim,
    });
    if (!a || !b || !c || !d) throw new Error('expected four claims');
    const attempt = (status: number | null, error: string | null) => ({
      startedAt: new Date(),
      status,
      ms: status === null ? 12.5 : 3,
      error,
      excerpt: status === 500 ? 'boom' : null,
      contentType: status === 500 ? 'text/plain' : null,
    });
    await fixture.deliveries.settleMany([
      { delivery: a, attempt: attempt(200, null), settlement: { state: 'delivered' } },
      {
        delivery: b,
        attempt: attempt(500, 'consumer answered 500'),
        settlement: { state: 'failed', retryInMs: 60_000 },
      },
      { delivery: c, attempt: attempt(null, 'connection refused (ECONNREFUSED)'), settlement: { state: 'dead' } },
      // A claim another instance took over: its attempt is recorded, the row is not moved.
      {
        delivery: { ...d, claim: crypto.randomUUID() },
        attempt: attempt(200, null),
        settlement: { state: 'delivered' },
      },
    ]);
    expect(await count('delivery_attempts')).toBe(4);
    const [settledA, settledB, settledC, settledD] = await Promise.all(
      [a, b, c, d].map((x) => fixture.deliveries.get(x.id)),
    );
    expect(settledA).toMatchObject({ state: 'delivered', next_attempt_at: null });
    expect(settledA?.delivered_at).not.toBeNull();
    expect(settledB).toMatchObject({ state: 'failed', delivered_at: null });
    expect(Date.parse(settledB?.next_attempt_at ?? '') - Date.now()).toBeGreaterThan(50_000);
    expect(settledB?.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status: 500, error: 'consumer answered 500', response_excerpt: 'boom' }),
    ]);
    expect(settledB?.attempts[0]?.response_content_type).toBe('text/plain');
    expect(settledC).toMatchObject({ state: 'dead', next_attempt_at: null });
    expect(settledC?.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status: null, ms: 12.5, error: 'connection refused (ECONNREFUSED)' }),
    ]);
    expect(settledD?.state).toBe('delivering');
    expect(settledD?.attempts).toHaveLength(1);
  });

  it('settles a batch and claims the next due rows in one statement, never claiming a row it settles', async () => {
    const store = forwardingStore();
    await store.insertMany(Array.from({ length: 6 }, () => newEvent({ eventType: 'push' })));
    const claim = crypto.randomUUID();
    // Claims that expire at once: the rows are due again while they are being settled.
    const first = await fixture.deliveries.claim({ rule: 'all', limit: 3, claimTimeoutMs: 1, ordered: false, claim });
    expect(first).toHaveLength(3);
    await delay(20);
    // The same connection, each statement it runs noted on the way.
    const statements: string[] = [];
    const counted: ClaimConnection = {
      ...fixture.claims,
      run: (name, text, values) => {
        statements.push(name);
        return fixture.claims.run(name, text, values);
      },
    };
    const next = await createDeliveryRepository(fixture.db.pool, counted).settleAndClaim(
      first.map((delivery) => ({
        delivery,
        attempt: { startedAt: new Date(), status: 200, ms: 2, error: null, excerpt: null, contentType: null },
        settlement: { state: 'delivered' as const },
      })),
      { rule: 'all', limit: 10, claimTimeoutMs: 30_000, ordered: false, claim },
    );
    expect(statements).toHaveLength(1);
    const settledIds = new Set(first.map((delivery) => delivery.id));
    expect(next).toHaveLength(3);
    expect(next.some((delivery) => settledIds.has(delivery.id))).toBe(false);
    expect(next.map((delivery) => delivery.attempt)).toEqual([1, 1, 1]);
    for (const delivery of first) expect((await fixture.deliveries.get(delivery.id))?.state).toBe('delivered');
    expect(await count('delivery_attempts')).toBe(3);
    // The claimed rows bring their events, as a claim alone does.
    const stored = await store.get(next[0]?.eventId ?? '');
    expect(next[0]?.event.payload.equals(stored?.payload ?? Buffer.alloc(0))).toBe(true);
  });
});

describe('backoff', () => {
  it('draws a full-jitter wait under initial × 2^(n−1), capped at max', () => {
    const backoff = { initialMs: 1_000, maxMs: 600_000 };
    expect(backoffDelayMs(backoff, 1, () => 0.999)).toBeLessThan(1_000);
    expect(backoffDelayMs(backoff, 4, () => 0.999)).toBeLessThan(8_000);
    expect(backoffDelayMs(backoff, 4, () => 0.999)).toBeGreaterThan(7_900);
    expect(backoffDelayMs(backoff, 40, () => 0.999)).toBeLessThan(600_000);
    expect(backoffDelayMs(backoff, 40, () => 0)).toBe(0);
  });

  it('reads Retry-After as seconds or a date, on 429 and 503 only, within max_ms', () => {
    const now = Date.parse('2026-12-03T12:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs('Thu, 03 Dec 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    const backoff = { initialMs: 10, maxMs: 5_000 };
    expect(nextAttemptDelayMs(backoff, 1, { status: 503, retryAfter: '2' }, () => 0.5, now)).toBe(2_000);
    expect(nextAttemptDelayMs(backoff, 1, { status: 429, retryAfter: '3600' }, () => 0.5, now)).toBe(5_000);
    expect(nextAttemptDelayMs(backoff, 1, { status: 500, retryAfter: '2' }, () => 0.5, now)).toBe(5);
    // Issue 26.6: a Retry-After past the contract's hour waits the hour, even under a day-long max_ms.
    const day = { initialMs: 10, maxMs: 86_400_000 };
    expect(nextAttemptDelayMs(day, 1, { status: 429, retryAfter: '3000000' }, () => 0.5, now)).toBe(3_600_000);
  });
});
