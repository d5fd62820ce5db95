/**
 * A consumer that comes back after a long outage gets its backlog at once: the first delivery that
 * succeeds makes the rule's waiting deliveries due, so they drain within a second of it at the
 * rule's concurrency (in order for an ordered rule), instead of each waiting out a backoff that
 * had grown to many seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { eventually, forwardConfig, sendOpen, startForwardServer, type ForwardServer } from './forward-kit.ts';

// The outage lasts until most backoffs have grown past GROWN_MS (MAX_OUTAGE_MS at the most): with
// full jitter when that happens is a matter of chance, so the test waits for the state itself
// rather than for a fixed 60 s, which CI spent idle. Growing a wait takes about as long as the
// wait, so the parallel rule's backoff is the default scaled by 0.6 (600 ms doubling to 10 min)
// and so is GROWN_MS (6 s, not 10 s): still twice the 3 s the whole backlog must drain within.
const GROWN_MS = 6_000;
const MAX_OUTAGE_MS = 90_000;
const QUEUED = 12;
const CONCURRENCY = 3;

const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
};

describe('forwarding after an outage', () => {
  let server: ForwardServer;
  let parallelPort: number;
  let orderedPort: number;
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    parallelPort = await closedPort();
    orderedPort = await closedPort();
    server = await startForwardServer(
      forwardConfig(
        [
          `  parallel: { to: "http://127.0.0.1:${parallelPort}/hook", event_types: [parallel], concurrency: ${CONCURRENCY}, max_attempts: 100, backoff: { initial_ms: 600, max_ms: 600000 } }`,
          `  in-order: { to: "http://127.0.0.1:${orderedPort}/hook", event_types: [ordered], ordered: true, max_attempts: 100, backoff: { initial_ms: 1000, max_ms: 8000 } }`,
        ].join('\n'),
      ),
    );
  });

  afterAll(async () => {
    await server?.close();
    await Promise.all(consumers.map((c) => c.close()));
  });

  it('drains the backlog within 1 s of the first success after an outage that grew the backoffs, keeping concurrency and order', async () => {
    const queued: string[] = [];
    const ordered: string[] = [];
    for (let n = 0; n < QUEUED; n += 1) queued.push((await sendOpen(server, { type: 'parallel', n })).id);
    for (let n = 0; n < 5; n += 1) ordered.push((await sendOpen(server, { type: 'ordered', n })).id);
    const dueNext = async (): Promise<number[]> => {
      const waiting = await Promise.all(queued.map(async (id) => (await server.deliveries(id))[0]));
      return waiting.map((d) => Date.parse(d?.next_attempt_at ?? '') - Date.now());
    };
    const outageEnds = Date.now() + MAX_OUTAGE_MS;
    let dueIn = await dueNext();
    while (dueIn.filter((ms) => ms > GROWN_MS).length <= QUEUED / 2 && Date.now() < outageEnds) {
      // Each look reads QUEUED events: once a second keeps it under the read budget's refill (20/s).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      dueIn = await dueNext();
    }
    // The backoffs have grown: most deliveries are not due again for seconds, more than the drain may take.
    expect(dueIn.filter((ms) => ms > 4_000).length, JSON.stringify(dueIn)).toBeGreaterThan(QUEUED / 2);

    // Both consumers come back; each answers after 100 ms and counts what it holds at once.
    let inFlight = 0;
    let mostInFlight = 0;
    const arrivals = new Map<string, number>();
    const parallel = await startConsumer(
      '127.0.0.1',
      (req, res) => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        arrivals.set(header(req, 'x-switchboard-replay'), Date.now());
        setTimeout(() => {
          inFlight -= 1;
          res.end();
        }, 100);
      },
      parallelPort,
    );
    const inOrder = await startConsumer('127.0.0.1', undefined, orderedPort);
    consumers.push(parallel, inOrder);
    // A new event arrives, as one would: it is due at once, and its delivery is the first success.
    const fresh = await sendOpen(server, { type: 'parallel', n: QUEUED });
    await eventually(() => arrivals.size === QUEUED + 1, 'every parallel event', 20_000);
    const firstSuccess = Math.min(...arrivals.values());
    const backlog = queued.map((id) => arrivals.get(id) ?? Infinity);
    // Draining starts within 1 s of the first success; twelve at three at a time take about 0.4 s.
    expect(Math.min(...backlog) - firstSuccess).toBeLessThan(1_000);
    expect(Math.max(...backlog) - firstSuccess).toBeLessThan(3_000);
    expect(arrivals.has(fresh.id)).toBe(true);
    expect(mostInFlight).toBeLessThanOrEqual(CONCURRENCY);
    expect(mostInFlight).toBeGreaterThan(1);

    // The ordered rule: its head retries within its 8 s cap, then the rest follow in received order.
    await eventually(() => inOrder.requests.length >= 5, 'every ordered event', 20_000);
    const order = inOrder.requests.map((r) => header(r, 'x-switchboard-replay'));
    expect(order).toEqual(ordered);
    await eventually(
      async () => (await server.forwards()).rules.every((rule) => rule.pending === 0),
      'nothing pending',
    );
  }, 150_000);
});
