/**
 * SIGKILL of a real switchboard process while 50 providers wait for the app's reply (config:
 * reply, without reply.retry). Each delivery's event row commits before the app is asked, so the
 * app has seen only committed events; the kill loses none of them, and none is sent to the app
 * again after the restart: the reply attempt was that rule's one delivery of the event. The rows
 * the kill left `delivering` do not stay so: the restarted process finds them past any reply wait
 * and makes them dead, with an attempt saying they were interrupted (an operator may retry them).
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import type { RecordedRequest } from '../support/local-server.ts';
import { randomToken } from '../support/spawn-switchboard.ts';
import { waitFor } from './support/clients.ts';
import { reliabilitySuite } from './support/suite.ts';

const TELEGRAM_TOKEN = 'reply-crash_secret-token';
const PENDING = 50;
/** The reply wait: long enough that every reply is still waiting when the process is killed. */
const REPLY_TIMEOUT_MS = 6_000;
/** What the restarted process waits past before it calls a reply interrupted (interruptedReplyAfterMs). */
const INTERRUPTED_AFTER_MS = REPLY_TIMEOUT_MS + 5_000;
const token = randomToken();

const config = (to: string) => ({
  providers: {
    telegram: { preset: 'telegram', token: TELEGRAM_TOKEN, reply: { from: 'bot', timeout_ms: REPLY_TIMEOUT_MS } },
  },
  forward: {
    bot: { to, concurrency: 8, timeout_ms: 1_000, claim_timeout_ms: 2_000, backoff: { initial_ms: 100, max_ms: 500 } },
  },
  rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
});

const update = (n: number): string =>
  JSON.stringify({
    update_id: 900_000 + n,
    message: { message_id: n, date: Math.floor(Date.now() / 1000), chat: { id: 7, type: 'private' }, text: `/n ${n}` },
  });

const eventIdOf = (req: RecordedRequest): string => String(req.headers[EVENT_ID_HEADER] ?? '');

describe('SIGKILL while replies are pending', () => {
  const suite = reliabilitySuite({ consumer: true, end: 'kill' });

  it('keeps every committed delivery, sends none twice after the restart, and leaves none delivering', async () => {
    const { db, consumer } = suite;
    // A slow app: it holds every request, and answers only when the test ends.
    const held: ServerResponse[] = [];
    consumer.handle((_req, res) => void held.push(res));
    const start = () => suite.spawn({ config: config(consumer.url('/bot')), token, logLevel: 'warn' });

    const first = await start();
    const sentAt = Date.now();
    const waiting = Array.from({ length: PENDING }, (_, n) =>
      fetch(`${first.url}/hooks/telegram`, {
        method: 'POST',
        body: update(n),
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': TELEGRAM_TOKEN },
      }).then(
        (res) => res.status,
        () => 'dropped' as const,
      ),
    );
    await waitFor(`${PENDING} replies waiting at the app`, () => consumer.requests.length >= PENDING || undefined, {
      timeoutMs: REPLY_TIMEOUT_MS - 1_000,
      intervalMs: 20,
    });
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // Every provider request was cut off, none answered: they were all still waiting.
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(['dropped']));
    first.cleanup();

    const seen = consumer.requests.map(eventIdOf);
    expect(new Set(seen).size).toBe(seen.length);
    const committed = async () =>
      new Set(
        await db.pool.anyFirst(
          sql.type(z.object({ id: z.string() }))`SELECT id::text AS id FROM events WHERE provider = 'telegram'`,
        ),
      );
    const stored = await committed();
    // The app is asked only once the event row has committed.
    for (const id of seen) expect(stored.has(id), `event ${id} the app saw is stored`).toBe(true);
    const states = sql.type(z.object({ state: z.string(), n: z.coerce.number() }))`
      SELECT state, count(*) AS n FROM deliveries GROUP BY state`;
    expect(await db.pool.any(states)).toEqual([{ state: 'delivering', n: stored.size }]);

    // Restart once the replies are past any wait, so the new process knows they were interrupted.
    await delay(Math.max(0, sentAt + INTERRUPTED_AFTER_MS + 500 - Date.now()));
    const second = await start();
    expect(await committed()).toEqual(stored);
    await waitFor(
      'the interrupted replies to be dead',
      async () => {
        const rows = await db.pool.any(states);
        return rows.length === 1 && rows[0]?.state === 'dead' ? rows : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const attempts = await db.pool.anyFirst(
      sql.type(z.object({ error: z.string() }))`SELECT error FROM delivery_attempts WHERE error IS NOT NULL`,
    );
    expect(attempts).toHaveLength(stored.size);
    for (const error of attempts) expect(error).toMatch(/^interrupted:/);
    // The outbox has had time to claim anything due (its claims come back after 2 s): nothing was sent again.
    await delay(3_000);
    expect(consumer.requests.map(eventIdOf)).toEqual(seen);
    expect(second.isRunning()).toBe(true);
    for (const res of held) res.end();
  });
});
