/**
 * Forwarding with the consumer up: every event arrives once, with the exact bytes, re-signed so
 * each provider's own library accepts it; rules select by provider, type and check outcome.
 */
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventList } from '../../generated/types.ts';
import { forwardRuleMatcher } from '../../src/config/forward-rules.ts';
import { parseConfig } from '../../src/config/load-config.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { newEvent } from '../support/events.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import {
  CI_TOKEN,
  GITHUB_SECRET,
  STANDARD_SECRET,
  STRIPE_SECRET,
  TOKEN,
  eventually,
  forwardConfig,
  sendGithub,
  sendOpen,
  sendStandard,
  sendStripe,
  sendToken,
  startForwardServer,
  stripe,
  type ForwardServer,
} from './forward-kit.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('forwarding to a consumer that is up', () => {
  let everything: Consumer;
  let pushes: Consumer;
  let invoices: Consumer;
  let unverified: Consumer;
  let server: ForwardServer;

  const header = (req: RecordedRequest, name: string): string | undefined => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const arrivalsOf = (consumer: Consumer, eventId: string): RecordedRequest[] =>
    consumer.requests.filter((r) => header(r, 'x-switchboard-replay') === eventId);
  /** Waits until the event has reached the consumer, then answers its first arrival there. */
  const firstArrival = async (consumer: Consumer, eventId: string, what: string): Promise<RecordedRequest> =>
    eventually(() => arrivalsOf(consumer, eventId)[0], what);

  beforeAll(async () => {
    [everything, pushes, invoices, unverified] = await Promise.all([
      startConsumer(),
      startConsumer(),
      startConsumer(),
      startConsumer(),
    ]);
    server = await startForwardServer(
      forwardConfig(
        [
          `  local-app: { to: "${everything.url('/webhooks?key=consumer-secret')}" }`,
          `  gh-push: { to: "${pushes.url()}", providers: [github], event_types: [push] }`,
          `  invoices: { to: "${invoices.url()}", event_types: [invoice, customer.created] }`,
          `  all-unverified: { to: "${unverified.url()}", providers: [github, ci], include_unverified: true }`,
        ].join('\n'),
      ),
    );
  });

  afterAll(async () => {
    await server?.close();
    await Promise.all([everything, pushes, invoices, unverified].map((c) => c?.close()));
  });

  it('delivers a GitHub event once, with the exact bytes, re-signed so @octokit/webhooks-methods verifies it', async () => {
    const sent = await sendGithub(server, 'push', { ref: 'refs/heads/main', n: 'ü' });
    const arrival = await firstArrival(everything, sent.id, 'the GitHub event at the consumer');
    expect(arrival.body.toString('utf8')).toBe(sent.body);
    expect(
      await verifyGithub(GITHUB_SECRET, arrival.body.toString('utf8'), header(arrival, 'x-hub-signature-256') ?? ''),
    ).toBe(true);
    expect(header(arrival, 'x-github-event')).toBe('push');
    expect(arrival.url).toBe('/webhooks?key=consumer-secret');
    const delivery = header(arrival, 'x-switchboard-delivery');
    expect(delivery).toMatch(UUID);
    expect(header(arrival, 'x-switchboard-attempt')).toBe('1');

    // The API tells the same story: one delivery per matching rule, its id the header's.
    const deliveries = await eventually(async () => {
      const list = await server.deliveries(sent.id);
      return list.every((d) => d.state === 'delivered') && list;
    }, 'every delivery delivered');
    expect(deliveries.map((d) => d.rule).sort()).toEqual(['all-unverified', 'gh-push', 'local-app']);
    const own = deliveries.find((d) => d.rule === 'local-app');
    expect(own?.id).toBe(delivery);
    expect(own?.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status: 200, error: null, response_excerpt: 'ok' }),
    ]);
    // Once only, even after the poll has had its chances.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(arrivalsOf(everything, sent.id)).toHaveLength(1);
  });

  it('re-signs Stripe and Standard Webhooks events so stripe.webhooks.constructEvent and standardwebhooks accept them', async () => {
    const paid = await sendStripe(server, 'invoice.paid');
    const standard = await sendStandard(server, 'customer.created');
    const stripeArrival = await firstArrival(everything, paid.id, 'the Stripe event');
    const standardArrival = await firstArrival(everything, standard.id, 'the Standard Webhooks event');
    expect(stripeArrival.body.toString('utf8')).toBe(paid.body);
    const event = stripe.webhooks.constructEvent(
      stripeArrival.body,
      header(stripeArrival, 'stripe-signature') ?? '',
      STRIPE_SECRET,
    );
    expect(event.type).toBe('invoice.paid');
    expect(standardArrival.body.toString('utf8')).toBe(standard.body);
    const verified = new Webhook(STANDARD_SECRET).verify(standardArrival.body.toString('utf8'), {
      'webhook-id': header(standardArrival, 'webhook-id') ?? '',
      'webhook-timestamp': header(standardArrival, 'webhook-timestamp') ?? '',
      'webhook-signature': header(standardArrival, 'webhook-signature') ?? '',
    });
    expect(verified).toEqual({ type: 'customer.created', data: { n: 1 } });
  });

  it('forwards open events without credentials and token events with their token', async () => {
    const open = await sendOpen(server, { type: 'build.done', n: 1 });
    const token = await sendToken(server, { type: 'deploy', n: 2 });
    const openArrival = await firstArrival(everything, open.id, 'the open event');
    const tokenArrival = await firstArrival(everything, token.id, 'the token event');
    expect(openArrival.body.toString('utf8')).toBe(open.body);
    expect(openArrival.headers['x-webhook-token']).toBeUndefined();
    expect(tokenArrival.body.toString('utf8')).toBe(token.body);
    expect(tokenArrival.headers['x-webhook-token']).toBe(CI_TOKEN);
  });

  it('forwards queue events too (written through the same outbox the queue sources use)', async () => {
    // The queue source stores through the event store; a store built with the server's rules
    // writes the same outbox rows, and the running dispatcher sends them.
    const config = parseConfig(
      forwardConfig(`  local-app: { to: "${everything.url('/webhooks?key=consumer-secret')}" }`),
      {},
    );
    const pool = await createDatabasePool(server.composed.databaseUrl, { maximumPoolSize: 1 });
    try {
      const matcher = forwardRuleMatcher(config.forward);
      const store = createEventStore(pool, matcher ? { forwardRulesFor: matcher } : {});
      const payload = Buffer.from('{"type":"order.created","id":7}');
      const [result] = await store.insertMany([
        newEvent({ provider: 'orders', eventType: 'order.created', trustMode: 'queue', verified: false, payload }),
      ]);
      const id = result?.event.id ?? '';
      await server.post('/hooks/sandbox', '{"type":"nudge"}'); // wakes the dispatcher via the bus
      const arrival = await firstArrival(everything, id, 'the queue event');
      expect(arrival.body.equals(payload)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('selects by providers and event_types as documented (a dotless type takes its family)', async () => {
    const push = await sendGithub(server, 'push', { ref: 'refs/heads/x' });
    const issues = await sendGithub(server, 'issues', { action: 'opened' });
    const invoice = await sendStripe(server, 'invoice.payment_failed');
    const charge = await sendStripe(server, 'charge.succeeded');
    const customer = await sendStandard(server, 'customer.created');
    const customerUpdated = await sendStandard(server, 'customer.updated');
    // Everything reaches the catch-all rule; wait for that, then look at the filtered ones.
    for (const id of [push.id, issues.id, invoice.id, charge.id, customer.id, customerUpdated.id]) {
      await eventually(() => arrivalsOf(everything, id).length > 0, `event ${id} at the catch-all consumer`);
    }
    await eventually(
      () => arrivalsOf(pushes, push.id).length === 1 && arrivalsOf(invoices, customer.id).length === 1,
      'the filtered rules to deliver',
    );
    const ids = (consumer: Consumer) => new Set(consumer.requests.map((r) => header(r, 'x-switchboard-replay')));
    expect(ids(pushes).has(issues.id)).toBe(false);
    expect(ids(pushes).has(invoice.id)).toBe(false);
    expect(ids(invoices).has(invoice.id)).toBe(true);
    expect(ids(invoices).has(charge.id)).toBe(false);
    expect(ids(invoices).has(customerUpdated.id)).toBe(false);
    expect(ids(invoices).has(push.id)).toBe(false);
    // Rules that did not take an event queued nothing for it.
    expect((await server.deliveries(charge.id)).map((d) => d.rule)).toEqual(['local-app']);
  });

  it('never forwards an event that failed its check, unless include_unverified, and then unsigned', async () => {
    const forged = await sendGithub(server, 'push', { ref: 'refs/heads/forged' }, 'not-the-secret');
    expect(forged.status).toBe(401);
    const badToken = await sendToken(server, { type: 'deploy', forged: true }, 'wrong-token');
    expect(badToken.status).toBe(401);
    const list = await server.api<ApiEventList>('/api/events?verified=false&limit=50');
    const stored = list.body.events.filter((e) => e.provider === 'github' || e.provider === 'ci').slice(0, 2);
    expect(stored).toHaveLength(2);
    for (const event of stored) {
      const arrival = await firstArrival(
        unverified,
        event.id,
        `the failed ${event.provider} event at the include_unverified consumer`,
      );
      // Sent as it came, with no fresh signature and no token.
      expect(arrival.headers['x-hub-signature-256']).toBeUndefined();
      expect(arrival.headers['x-webhook-token']).toBeUndefined();
      expect((await server.deliveries(event.id)).map((d) => d.rule)).toEqual(['all-unverified']);
    }
    expect(everything.requests.some((r) => stored.some((e) => header(r, 'x-switchboard-replay') === e.id))).toBe(false);
  });

  it('marks list rows and reports each rule on /api/forwards with its target redacted', async () => {
    const sent = await sendOpen(server, { type: 'mark', n: 3 });
    await eventually(async () => {
      const list = await server.api<ApiEventList>('/api/events?limit=5');
      return list.body.events.find((e) => e.id === sent.id)?.forward_state === 'delivered';
    }, 'the list row to say delivered');
    const forwards = await server.forwards();
    expect(forwards.rules.map((r) => r.name)).toEqual(['local-app', 'gh-push', 'invoices', 'all-unverified']);
    const own = forwards.rules[0];
    expect(own).toMatchObject({ to: `${everything.url('/webhooks')}?…`, dead: 0, paused: false });
    expect(own?.delivered_last_hour).toBeGreaterThan(5);
    expect(JSON.stringify(forwards)).not.toContain('consumer-secret');
  });

  it('exports the forward metrics: attempts by outcome, the backlog per rule and the attempt latency', async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    expect(text).toMatch(/^switchboard_forward_deliveries_total\{rule="local-app",outcome="delivered"\} [1-9]\d*$/m);
    expect(text).toMatch(/^switchboard_forward_pending\{rule="local-app"\} \d+$/m);
    expect(text).toMatch(/^switchboard_forward_oldest_pending_seconds\{rule="gh-push"\} [\d.e+-]+$/m);
    expect(text).toMatch(/^switchboard_forward_attempt_duration_seconds_count\{rule="local-app"\} [1-9]\d*$/m);
  });
});
