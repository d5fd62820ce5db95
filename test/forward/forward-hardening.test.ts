/**
 * Issue 26.1 and 26.2: what a consumer answers must neither leak the credentials switchboard
 * attached nor break the bookkeeping of other deliveries. Consumers on 127.0.0.1; the server is the
 * composed product with real forward rules and replay.
 */
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Delivery, ReplayHistory, ReplayResult } from '../../generated/types.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { refuseInserts } from '../support/database.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import {
  CI_TOKEN,
  GITHUB_SECRET,
  RELAY_PASSWORD,
  RELAY_USER,
  TOKEN,
  eventually,
  forwardConfig,
  sendBasic,
  sendGithub,
  sendOpen,
  sendToken,
  startForwardServer,
  type ForwardServer,
} from './forward-kit.ts';

const header = (req: RecordedRequest, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * Answers 500 with every request header it got, as a debugging consumer's error page might, and
 * first, for HTTP Basic, the password it decoded on its own ("wrong password: …").
 */
function echoHeaders(req: RecordedRequest, res: import('node:http').ServerResponse): void {
  res.statusCode = 500;
  res.setHeader('content-type', 'application/json');
  const basic = /^Basic (.+)$/.exec(header(req, 'authorization') ?? '')?.[1];
  const password = basic === undefined ? undefined : Buffer.from(basic, 'base64').toString('utf8').split(':')[1];
  res.end(JSON.stringify({ error: 'boom', password, headers: req.headers, raw: req.rawHeaders.join('\n') }));
}

let server: ForwardServer;
let echo: Consumer;
let nul: Consumer;
let healthy: Consumer;

async function replay(eventId: string, targetUrl: string): Promise<{ status: number; body: ReplayResult }> {
  const res = await fetch(`${server.url}/api/events/${eventId}/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ target_url: targetUrl }),
  });
  return { status: res.status, body: (await res.json()) as ReplayResult };
}

beforeAll(async () => {
  [echo, nul, healthy] = await Promise.all([startConsumer(), startConsumer(), startConsumer()]);
  echo.handle(echoHeaders);
  // A NUL and a byte that is not UTF-8: PostgreSQL text refuses the first, UTF-8 the second.
  nul.handle((_req, res) => res.end(Buffer.concat([Buffer.from('ok\u0000done'), Buffer.from([0xff])])));
  const fast = 'timeout_ms: 1000, claim_timeout_ms: 3000, backoff: { initial_ms: 50, max_ms: 100 }';
  server = await startForwardServer(
    forwardConfig(
      [
        `  echo: { to: "${echo.url()}", providers: [ci, github, relay], max_attempts: 1 }`,
        `  nul: { to: "${nul.url()}", providers: [sandbox], concurrency: 8, ${fast} }`,
        `  healthy: { to: "${healthy.url()}", providers: [sandbox], concurrency: 8, ${fast} }`,
        `  broken: { to: "${healthy.url('/broken')}", providers: [sandbox], concurrency: 8, ${fast} }`,
      ].join('\n'),
    ),
  );
});

afterAll(async () => {
  await server?.close();
  await Promise.all([echo, nul, healthy].map((c) => c?.close()));
});

describe('credentials in stored response excerpts (26.1)', () => {
  const settledAttempt = async (eventId: string): Promise<NonNullable<Delivery['attempts'][number]>> => {
    const [delivery] = await eventually(async () => {
      const list = await server.deliveries(eventId);
      return list.length === 1 && list[0]?.state === 'dead' && list;
    }, 'the echo delivery settled');
    const attempt = delivery?.attempts[0];
    if (attempt === undefined) throw new Error('no attempt recorded');
    return attempt;
  };

  it('redacts the token a token provider attached, in forwarding and replay excerpts', async () => {
    const sent = await sendToken(server, { type: 'build.done', n: 1 });
    const attempt = await settledAttempt(sent.id);
    // The consumer did get the token, and echoed it.
    const arrival = echo.requests.find((r) => header(r, 'x-switchboard-replay') === sent.id);
    expect(header(arrival as RecordedRequest, 'x-webhook-token')).toBe(CI_TOKEN);
    expect(attempt.status).toBe(500);
    expect(attempt.response_excerpt).toContain('"x-webhook-token":"[redacted]"');
    expect(attempt.response_excerpt).not.toContain(CI_TOKEN);

    const replayed = await replay(sent.id, echo.url('/replay'));
    expect(replayed.status).toBe(200);
    expect(replayed.body.signed).toBe('resigned');
    expect(replayed.body.response_excerpt).toContain('[redacted]');
    expect(replayed.body.response_excerpt).not.toContain(CI_TOKEN);
    const history = await server.api<ReplayHistory>(`/api/events/${sent.id}/replays`);
    expect(history.body.attempts[0]?.response_excerpt).toContain('[redacted]');
    expect(JSON.stringify(history.body)).not.toContain(CI_TOKEN);
  });

  it('redacts a fresh signature, its hex on its own, and the signing secret', async () => {
    const sent = await sendGithub(server, 'push', { ref: 'refs/heads/main', secret: GITHUB_SECRET });
    const attempt = await settledAttempt(sent.id);
    const arrival = echo.requests.find((r) => header(r, 'x-switchboard-replay') === sent.id);
    const signature = header(arrival as RecordedRequest, 'x-hub-signature-256') ?? '';
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(attempt.response_excerpt).toContain('"x-hub-signature-256":"[redacted]"');
    for (const secret of [signature, signature.slice('sha256='.length), GITHUB_SECRET]) {
      expect(attempt.response_excerpt).not.toContain(secret);
    }

    const replayed = await replay(sent.id, echo.url('/replay'));
    const history = await server.api<ReplayHistory>(`/api/events/${sent.id}/replays`);
    for (const text of [replayed.body.response_excerpt ?? '', JSON.stringify(history.body)]) {
      expect(text).toContain('[redacted]');
      expect(text).not.toMatch(/sha256=[0-9a-f]{64}/);
      expect(text).not.toContain(GITHUB_SECRET);
    }
  });
});

describe('an HTTP Basic password a consumer prints alone (issue 37.6)', () => {
  it('is redacted from forwarding and replay excerpts, with the pair and the header value', async () => {
    const sent = await sendBasic(server, { type: 'order.shipped', n: 1 });
    const [delivery] = await eventually(async () => {
      const list = await server.deliveries(sent.id);
      return list.length === 1 && list[0]?.state === 'dead' && list;
    }, 'the echo delivery settled');
    const arrival = echo.requests.find((r) => header(r, 'x-switchboard-replay') === sent.id);
    const authorization = header(arrival as RecordedRequest, 'authorization') ?? '';
    expect(authorization).toBe(`Basic ${Buffer.from(`${RELAY_USER}:${RELAY_PASSWORD}`).toString('base64')}`);
    const excerpt = delivery?.attempts[0]?.response_excerpt ?? '';
    expect(excerpt).toContain('"password":"[redacted]"');

    const replayed = await replay(sent.id, echo.url('/replay'));
    expect(replayed.body.signed).toBe('resigned');
    const history = await server.api<ReplayHistory>(`/api/events/${sent.id}/replays`);
    for (const text of [excerpt, replayed.body.response_excerpt ?? '', JSON.stringify(history.body)]) {
      expect(text).toContain('[redacted]');
      for (const secret of [RELAY_PASSWORD, `${RELAY_USER}:${RELAY_PASSWORD}`, authorization.slice('Basic '.length)]) {
        expect(text).not.toContain(secret);
      }
    }
  });
});

describe('a NUL byte in an answer (26.2)', () => {
  async function burst(count: number): Promise<string[]> {
    return Promise.all(Array.from({ length: count }, (_, n) => sendOpen(server, { type: 'burst', n }))).then((sent) =>
      sent.map((s) => s.id),
    );
  }

  async function openDeliveries(rule: string): Promise<number> {
    const pool = await createDatabasePool(server.composed.databaseUrl, { maximumPoolSize: 1 });
    try {
      return await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM deliveries WHERE rule = ${rule} AND state IN ('pending', 'delivering', 'failed')
      `);
    } finally {
      await pool.end();
    }
  }

  /** Each delivery's recorded attempts for `rule`, as their errors in order (null: delivered). */
  async function attemptErrors(rule: string): Promise<Map<string, (string | null)[]>> {
    const pool = await createDatabasePool(server.composed.databaseUrl, { maximumPoolSize: 1 });
    try {
      const rows = await pool.any(sql.type(z.object({ id: z.string(), errors: z.array(z.string().nullable()) }))`
        SELECT d.id, array_agg(a.error ORDER BY a.attempt) AS errors
        FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
        WHERE d.rule = ${rule} GROUP BY d.id
      `);
      return new Map(rows.map((row) => [row.id, row.errors]));
    } finally {
      await pool.end();
    }
  }

  /**
   * Every delivery of `rule` is sent once to `consumer` at `path`. The one exception is not a
   * double send: under load an answer can come after timeout_ms, and that attempt is recorded as
   * failed and tried again (at least once). So each delivery reached the consumer exactly as often
   * as its history records attempts, every attempt but the last timed out, and the last delivered it.
   */
  async function expectSentOncePerAttempt(consumer: Consumer, path: string, rule: string, ids: readonly string[]) {
    await eventually(async () => (await openDeliveries(rule)) === 0, `every ${rule} delivery settled`, 20_000);
    const requests = consumer.requests.filter((r) => r.url === path);
    const counts = new Map<string, number>();
    for (const req of requests) {
      const id = header(req, 'x-switchboard-delivery') ?? '';
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    const history = await attemptErrors(rule);
    const sentOtherThanRecorded = [...counts].filter(([id, sends]) => {
      const errors = history.get(id) ?? [];
      const timedOut = errors.slice(0, -1).every((error) => error?.startsWith('no answer within') === true);
      return sends !== errors.length || !timedOut || errors.at(-1) !== null;
    });
    expect(sentOtherThanRecorded.map(([id, sends]) => ({ id, sends, errors: history.get(id) }))).toEqual([]);
    const events = new Set(requests.map((r) => header(r, 'x-switchboard-replay')));
    expect(ids.filter((id) => !events.has(id))).toEqual([]);
  }

  async function expectEachSentOnce(path: string, ids: readonly string[]): Promise<void> {
    const arrived = (): number =>
      healthy.requests.filter((r) => r.url === path && ids.includes(header(r, 'x-switchboard-replay') ?? '')).length;
    await eventually(() => arrived() >= ids.length, `all ${ids.length} healthy deliveries`, 20_000);
    // Past the claim timeout (3 s) twice over: a delivery left unsettled would be sent again by now.
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    await expectSentOncePerAttempt(healthy, path, 'healthy', ids);
  }

  it('stores the answer escaped, and every healthy delivery beside it is sent exactly once', async () => {
    const ids = await burst(40);
    await expectEachSentOnce('/webhook', ids);

    // The NUL consumer's deliveries settled too, once each, with the answer stored escaped.
    const deliveries = await eventually(async () => {
      const list = await server.deliveries(ids[0] ?? '');
      const own = list.find((d) => d.rule === 'nul');
      return own?.state === 'delivered' && own;
    }, 'the NUL delivery settled');
    expect(deliveries.attempts.at(-1)).toEqual(
      expect.objectContaining({ status: 200, error: null, response_excerpt: 'ok\\u0000done\\xff' }),
    );
    await expectSentOncePerAttempt(nul, '/webhook', 'nul', ids);

    // A replay to the same consumer is in the history, escaped the same way.
    const replayed = await replay(ids[0] ?? '', nul.url('/replay'));
    expect(replayed.body).toMatchObject({ delivered: true, response_excerpt: 'ok\\u0000done\\xff' });
    expect(replayed.body.history_recorded).toBeUndefined();
    const history = await server.api<ReplayHistory>(`/api/events/${ids[0] ?? ''}/replays`);
    expect(history.body.attempts).toEqual([
      expect.objectContaining({ delivered: true, response_excerpt: 'ok\\u0000done\\xff' }),
    ]);
  });

  it('settles row by row when a batch fails: a row the database refuses never re-sends another rule', async () => {
    // The database refuses every attempt row of the rule "broken" (a real PostgreSQL error), so
    // any batch holding one fails as a NUL once made it fail.
    const pool = await createDatabasePool(server.composed.databaseUrl, { maximumPoolSize: 1 });
    try {
      await refuseInserts(pool, {
        trigger: 'refuse_broken_rule',
        table: 'delivery_attempts',
        column: 'rule',
        value: 'broken',
      });
      const ids = await burst(40);
      await expectEachSentOnce('/webhook', ids);
      // The refused rule itself is still being tried: its rows never settle.
      expect(healthy.requests.filter((r) => r.url === '/broken').length).toBeGreaterThanOrEqual(ids.length);
    } finally {
      await pool.end();
    }
  });
});
