/**
 * Forwarding when the consumer is not well: down and back (backoff, not a hot loop), failing until
 * dead (and retried by hand), asking to wait (Retry-After), and a rule kept in order across a
 * failure; plus pause and resume, which the database keeps.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery, ForwardRetryDeadResult, ForwardRuleStatus } from '../../generated/types.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { closedPort, startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { eventually, forwardConfig, sendOpen, startForwardServer, type ForwardServer } from './forward-kit.ts';

const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
};

describe('forwarding through failures', () => {
  let downPort: number;
  let revived: Consumer | undefined;
  let firstFails: Consumer;
  let failing: Consumer;
  let throttling: Consumer;
  let ordered: Consumer;
  let pausable: Consumer;
  let server: ForwardServer;
  /** When each request reached each consumer, by delivery id. */
  const seenAt = new Map<string, number[]>();
  const note = (req: RecordedRequest): void => {
    const id = header(req, 'x-switchboard-delivery');
    seenAt.set(id, [...(seenAt.get(id) ?? []), Date.now()]);
  };
  /** Waits until the event's first delivery is delivered, and answers it with the times its consumer saw it. */
  const delivered = async (eventId: string, what: string): Promise<{ delivery: Delivery; times: number[] }> => {
    const delivery = await eventually(
      async () => {
        const [first] = await server.deliveries(eventId);
        return first?.state === 'delivered' && first;
      },
      what,
      10_000,
    );
    return { delivery, times: seenAt.get(delivery.id) ?? [] };
  };

  beforeAll(async () => {
    downPort = await closedPort();
    const attemptsOf = new Map<string, number>();
    firstFails = await startConsumer('127.0.0.1', (req, res) => {
      note(req);
      const id = header(req, 'x-switchboard-delivery');
      const n = (attemptsOf.get(id) ?? 0) + 1;
      attemptsOf.set(id, n);
      res.statusCode = n === 1 ? 500 : 200;
      res.end();
    });
    failing = await startConsumer('127.0.0.1', (_req, res) => {
      res.statusCode = 500;
      res.setHeader('content-type', 'text/plain');
      res.end('boom: the consumer is broken');
    });
    throttling = await startConsumer('127.0.0.1', (req, res) => {
      note(req);
      const first = header(req, 'x-switchboard-attempt') === '1';
      res.statusCode = first ? 429 : 200;
      if (first) res.setHeader('retry-after', '1');
      res.end();
    });
    ordered = await startConsumer('127.0.0.1', (req, res) => {
      // The third event fails its first two attempts.
      const body = JSON.parse(req.body.toString('utf8')) as { n: number };
      res.statusCode = body.n === 3 && Number(header(req, 'x-switchboard-attempt')) <= 2 ? 500 : 200;
      res.end();
    });
    pausable = await startConsumer();
    server = await startForwardServer(
      forwardConfig(
        [
          `  down: { to: "http://127.0.0.1:${downPort}/hook", event_types: [down], max_attempts: 100, backoff: { initial_ms: 125, max_ms: 1000 } }`,
          `  defaults: { to: "${firstFails.url()}", event_types: [flaky] }`,
          `  strict: { to: "${failing.url()}", event_types: [dead], max_attempts: 2, backoff: { initial_ms: 20, max_ms: 50 } }`,
          `  throttled: { to: "${throttling.url()}", event_types: [throttle], backoff: { initial_ms: 10, max_ms: 5000 } }`,
          `  in-order: { to: "${ordered.url()}", event_types: [seq], ordered: true, backoff: { initial_ms: 50, max_ms: 100 } }`,
          `  pausable: { to: "${pausable.url()}", event_types: [pause] }`,
        ].join('\n'),
      ),
    );
  });

  afterAll(async () => {
    await server?.close();
    await Promise.all(
      [revived, firstFails, failing, throttling, ordered, pausable].map((c) => c?.close() ?? Promise.resolve()),
    );
  });

  it('keeps retrying with backoff while the consumer is down, then delivers everything once it is up', async () => {
    const sent: Array<{ id: string; body: string }> = [];
    for (let n = 0; n < 10; n += 1) sent.push(await sendOpen(server, { type: 'down', n }));
    // The outage (30 s with nothing listening on the consumer's port, against waits of
    // 0.5 s doubling to 4 s) at a quarter of the time: the rule's waits and the outage are both
    // scaled, so the backoff goes through the same steps, up to its cap, in 7.5 s.
    const outageMs = 7_500;
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    const during = await Promise.all(sent.map(async (s) => (await server.deliveries(s.id))[0]));
    for (const delivery of during) {
      // Full-jitter waits under 125 ms doubling to 1 s come to about eighteen attempts in 7.5 s (no
      // fewer than seven even if every wait drew its cap); a hot loop makes thousands.
      expect(delivery?.attempts.length).toBeGreaterThanOrEqual(5);
      expect(delivery?.attempts.length).toBeLessThanOrEqual(45);
      expect(delivery?.attempts[0]?.error).toMatch(/connection refused/);
      expect(delivery?.attempts[0]?.status).toBeNull();
    }
    const health = (await server.forwards()).rules.find((r) => r.name === 'down');
    expect(health?.pending).toBe(10);
    expect(health?.last_error).toMatch(/connection refused/);
    expect(health?.oldest_pending_age).toBeGreaterThan(6);

    revived = await startConsumer('127.0.0.1', undefined, downPort);
    const consumer = revived;
    await eventually(
      () => new Set(consumer.requests.map((r) => header(r, 'x-switchboard-replay'))).size === 10,
      'all ten events',
      20_000,
    );
    for (const [i, s] of sent.entries()) {
      const arrival = consumer.requests.find((r) => header(r, 'x-switchboard-replay') === s.id);
      expect(arrival?.body.toString('utf8')).toBe(s.body);
      // The same delivery id on every attempt; the attempt number counts the refused ones too.
      expect(header(arrival as RecordedRequest, 'x-switchboard-delivery')).toBe(during[i]?.id);
      expect(Number(header(arrival as RecordedRequest, 'x-switchboard-attempt'))).toBeGreaterThan(
        during[i]?.attempts.length ?? 0,
      );
    }
    await eventually(
      async () => (await server.forwards()).rules.find((r) => r.name === 'down')?.pending === 0,
      'nothing pending',
    );
  }, 90_000);

  it('sends the first retry within 2 s with the default backoff', async () => {
    const sent = await sendOpen(server, { type: 'flaky', n: 1 });
    const { delivery, times } = await delivered(sent.id, 'the flaky event delivered');
    expect(times).toHaveLength(2);
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeLessThan(2_000);
    expect(delivery.attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it('makes a delivery dead after max_attempts; a manual retry delivers it; retry-dead retries them all', async () => {
    const sent: Array<{ id: string; body: string }> = [];
    for (let n = 0; n < 3; n += 1) sent.push(await sendOpen(server, { type: 'dead', n }));
    const dead = await eventually(async () => {
      const all = (await Promise.all(sent.map((s) => server.deliveries(s.id)))).map((l) => l[0]);
      return all.every((d) => d?.state === 'dead') && (all as Delivery[]);
    }, 'three dead deliveries');
    for (const delivery of dead) {
      expect(delivery.attempts).toHaveLength(2);
      expect(delivery.next_attempt_at).toBeNull();
      expect(delivery.attempts[1]).toMatchObject({
        attempt: 2,
        status: 500,
        error: 'consumer answered 500',
        response_excerpt: 'boom: the consumer is broken',
        response_content_type: 'text/plain',
      });
    }
    const health = (await server.forwards()).rules.find((r) => r.name === 'strict');
    expect(health).toMatchObject({ dead: 3, pending: 0, last_error: 'consumer answered 500' });

    failing.handle((_req, res) => res.end('fixed'));
    const [first, ...rest] = dead;
    const retried = await server.api<Delivery>(`/api/deliveries/${first?.id ?? ''}/retry`, 'POST');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: first?.id, state: 'pending', attempt_count: 2 });
    await eventually(
      async () => (await server.deliveries(sent[0]?.id ?? ''))[0]?.state === 'delivered',
      'the retried one delivered',
    );
    const arrival = failing.requests.at(-1);
    expect(arrival?.headers['x-switchboard-delivery']).toBe(first?.id);
    expect(arrival?.headers['x-switchboard-attempt']).toBe('3');
    // Delivered is final: retrying it again is refused.
    const again = await server.api<{ error: { code: string } }>(`/api/deliveries/${first?.id ?? ''}/retry`, 'POST');
    expect(again).toMatchObject({ status: 400, body: { error: { code: 'invalid_argument' } } });

    const all = await server.api<ForwardRetryDeadResult>('/api/forwards/strict/retry-dead', 'POST');
    expect(all).toEqual({ status: 200, body: { rule: 'strict', retried: rest.length } });
    await eventually(async () => {
      const states = await Promise.all(sent.map(async (s) => (await server.deliveries(s.id))[0]?.state));
      return states.every((state) => state === 'delivered');
    }, 'every retried delivery delivered');
    expect((await server.api('/api/forwards/nope/retry-dead', 'POST')).status).toBe(404);
    expect((await server.api('/api/deliveries/0193a5b2-7c1d-7e3f-8a4b-123456789abc/retry', 'POST')).status).toBe(404);
  });

  it('honours Retry-After on a 429 instead of its much shorter backoff', async () => {
    const sent = await sendOpen(server, { type: 'throttle', n: 1 });
    const { times } = await delivered(sent.id, 'the throttled event delivered');
    expect(times).toHaveLength(2);
    // Backoff alone would have retried within 10 ms; Retry-After: 1 asked for a second.
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('keeps an ordered rule in received order, holding it back while one event fails', async () => {
    const sent: Array<{ id: string; body: string }> = [];
    for (let n = 1; n <= 8; n += 1) sent.push(await sendOpen(server, { type: 'seq', n }));
    await eventually(
      () => ordered.requests.filter((r) => r.headers['x-switchboard-attempt'] !== undefined).length >= 10,
      'ten attempts',
      15_000,
    );
    const seen = ordered.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { n: number }).n);
    expect(seen).toEqual([1, 2, 3, 3, 3, 4, 5, 6, 7, 8]);
  });

  it('pauses a rule (kept in the database) and sends what waited once resumed', async () => {
    const paused = await server.api<ForwardRuleStatus>('/api/forwards/pausable/pause', 'POST');
    expect(paused).toMatchObject({ status: 200, body: { name: 'pausable', paused: true } });
    const sent: Array<{ id: string; body: string }> = [];
    for (let n = 0; n < 3; n += 1) sent.push(await sendOpen(server, { type: 'pause', n }));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(pausable.requests).toHaveLength(0);
    expect((await server.forwards()).rules.find((r) => r.name === 'pausable')).toMatchObject({
      pending: 3,
      paused: true,
    });
    const pool = await createDatabasePool(server.composed.databaseUrl, { maximumPoolSize: 1 });
    try {
      const row = await pool.one(
        sql.type(z.object({ paused: z.boolean() }))`SELECT paused FROM forward_rule_state WHERE rule = 'pausable'`,
      );
      expect(row.paused).toBe(true);
    } finally {
      await pool.end();
    }
    const resumed = await server.api<ForwardRuleStatus>('/api/forwards/pausable/resume', 'POST');
    expect(resumed.body.paused).toBe(false);
    await eventually(() => pausable.requests.length === 3, 'the three waiting events');
    expect((await server.api('/api/forwards/nope/pause', 'POST')).status).toBe(404);
  });
});
