/**
 * A rule keeps its next deliveries claimed while it sends (src/forward/rule-worker.ts): at most
 * `concurrency` in flight at the consumer, more than one and at most two `concurrency` claimed
 * ahead of them, and the rest left due in the database for any instance. Once the consumer answers, every
 * delivery arrives exactly once.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { eventually, forwardConfig, sendOpen, startForwardServer, type ForwardServer } from './forward-kit.ts';

const CONCURRENCY = 2;
const QUEUED = 12;

const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
};

describe('claiming ahead', () => {
  let server: ForwardServer;
  let consumer: Consumer;
  // Requests are held until the test lets them go.
  const held: ServerResponse[] = [];
  let holding = true;

  beforeAll(async () => {
    consumer = await startConsumer('127.0.0.1', (_req, res) => {
      if (holding) held.push(res);
      else res.end('ok');
    });
    server = await startForwardServer(
      forwardConfig(
        `  held: { to: "${consumer.url('/hook')}", event_types: [held], concurrency: ${CONCURRENCY}, resign: false }`,
      ),
    );
  });

  afterAll(async () => {
    for (const res of held) res.end();
    await server?.close();
    await consumer?.close();
  });

  it('holds at most two concurrency claimed ahead of the sends, and delivers each once', async () => {
    const ids: string[] = [];
    for (let n = 0; n < QUEUED; n += 1) ids.push((await sendOpen(server, { type: 'held', n })).id);
    await eventually(() => held.length === CONCURRENCY, 'the first sends');
    // Time for any further claim or send to show.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(held).toHaveLength(CONCURRENCY);
    const states = await Promise.all(ids.map(async (id) => (await server.deliveries(id))[0]?.state));
    const claimed = states.filter((state) => state === 'delivering').length;
    // The two sending and up to two concurrency claimed ahead (a claim waits until it can take a
    // whole concurrency, so one fewer than that may be missing); the rest still due for any instance.
    expect(claimed).toBeGreaterThan(2 * CONCURRENCY);
    expect(claimed).toBeLessThanOrEqual(3 * CONCURRENCY);
    expect(states.filter((state) => state === 'pending')).toHaveLength(QUEUED - claimed);

    holding = false;
    for (const res of held.splice(0)) res.end('ok');
    await eventually(
      async () => (await server.forwards()).rules.every((rule) => rule.pending === 0),
      'nothing pending',
    );
    const sent = consumer.requests.map((req) => header(req, 'x-switchboard-replay'));
    expect([...sent].sort()).toEqual([...ids].sort());
  }, 60_000);
});
