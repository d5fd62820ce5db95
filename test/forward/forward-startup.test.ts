/**
 * Forwarding at the edges of a server's life: a rule whose target the policy refuses stops the
 * start-up with a config error naming the rule and the reason (the CLI exits 2 on ConfigError),
 * and at shutdown attempts in flight either finish or are released for the next instance.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.ts';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { createEmptyDatabase } from '../support/database.ts';
import { closedPort, startConsumer, type Consumer } from '../support/local-server.ts';
import { eventually } from './forward-kit.ts';

// One database for every start here: a later instance must find what an earlier one left.
let db: { url: string; drop(): Promise<void> };

beforeAll(async () => {
  db = await createEmptyDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const start = (config: string, port = 0, drainTimeoutMs?: number): Promise<ComposedServer> =>
  startComposedServer({
    config,
    envToken: 'forward-startup-token-0123456789',
    database: { url: db.url },
    port,
    ...(drainTimeoutMs === undefined ? {} : { drainTimeoutMs }),
  });

const PROVIDERS = 'providers:\n  sandbox: { trust_mode: open, event_type_from: /type }\n';

describe('target policy at start-up', () => {
  const refusals: Array<[string, (port: number) => string, RegExp]> = [
    ['another scheme', () => 'ftp://127.0.0.1/drop', /forward\.bad\.to: refused: scheme ftp: is not http or https/],
    ['an address outside the policy', () => 'http://0.0.0.0:9/hook', /forward\.bad\.to: refused: .*0\.0\.0\.0/],
    [
      'credentials in the URL',
      () => 'http://user:pw@127.0.0.1:9/hook',
      /forward\.bad\.to: refused: the URL carries credentials/,
    ],
    [
      'its own webhook route',
      (port) => `http://127.0.0.1:${port}/hooks/sandbox`,
      /forward\.bad\.to: refused: .*loop back into switchboard/,
    ],
    [
      'its own API',
      (port) => `http://localhost:${port}/api/events`,
      /forward\.bad\.to: localhost:\d+\/api\/events is switchboard itself/,
    ],
  ];
  for (const [what, to, message] of refusals) {
    it(`refuses ${what} as a config error naming the rule and the reason`, async () => {
      const port = await closedPort();
      const failure = await start(`${PROVIDERS}forward:\n  bad: { to: "${to(port)}" }\n`, port).then(
        async (running) => {
          await running.close();
          return null;
        },
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as Error).message).toMatch(message);
    });
  }
});

describe('graceful shutdown', () => {
  let consumer: Consumer;
  afterAll(() => consumer?.close());

  async function deliveryRow(): Promise<{ state: string; next_attempt_at: string | null; errors: string[] }> {
    const pool = await createDatabasePool(db.url, { maximumPoolSize: 1 });
    try {
      return await pool.one(sql.type(
        z.object({ state: z.string(), next_attempt_at: z.string().nullable(), errors: z.array(z.string()) }),
      )`
        SELECT deliveries.state, deliveries.next_attempt_at::text,
          coalesce(array_agg(delivery_attempts.error ORDER BY delivery_attempts.attempt) FILTER (WHERE delivery_attempts.error IS NOT NULL), '{}') AS errors
        FROM deliveries LEFT JOIN delivery_attempts ON delivery_attempts.delivery_id = deliveries.id
        WHERE deliveries.rule = 'slow'
        GROUP BY deliveries.id, deliveries.event_received_at
        ORDER BY deliveries.created_at DESC LIMIT 1
      `);
    } finally {
      await pool.end();
    }
  }

  it('lets an attempt in flight finish, and releases one that outlasts the drain', async () => {
    let holdMs = 600;
    consumer = await startConsumer('127.0.0.1', (_req, res) => {
      setTimeout(() => res.end('ok'), holdMs);
    });
    const config = `${PROVIDERS}forward:\n  slow: { to: "${consumer.url()}" }\n`;
    const send = (running: ComposedServer) =>
      fetch(`${running.url}/hooks/sandbox`, { method: 'POST', body: '{"type":"slow"}' });

    let running = await start(config, 0, 5_000);
    await send(running);
    await eventually(() => consumer.requests.length === 1, 'the first attempt in flight');
    await running.close();
    expect((await deliveryRow()).state).toBe('delivered');

    holdMs = 60_000;
    running = await start(config, 0, 200);
    await send(running);
    await eventually(() => consumer.requests.length === 2, 'the second attempt in flight');
    const started = Date.now();
    await running.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    const released = await deliveryRow();
    expect(released.state).toBe('failed');
    expect(released.next_attempt_at).not.toBeNull();
    expect(released.errors).toEqual(['interrupted by shutdown']);
  });
});

describe('a forward rule removed from the config (26.5)', () => {
  let down: Consumer;
  let fresh: Consumer;
  afterAll(async () => {
    await Promise.all([down, fresh].map((c) => c?.close()));
  });

  const api = async <T>(
    running: ComposedServer,
    path: string,
    method = 'GET',
  ): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${running.url}${path}`, {
      method,
      headers: { authorization: 'Bearer forward-startup-token-0123456789' },
    });
    return { status: res.status, body: (await res.json()) as T };
  };

  it('cancels its open deliveries at start-up with the reason, and a rule re-added under its name sees only newer events', async () => {
    down = await startConsumer('127.0.0.1', (_req, res) => {
      res.statusCode = 503;
      res.end('down');
    });
    fresh = await startConsumer();
    const rule = (to: string, extra = ''): string =>
      `${PROVIDERS}forward:\n  gone: { to: "${to}", backoff: { initial_ms: 60000, max_ms: 60000 }${extra} }\n`;
    let running = await start(rule(down.url()));
    const old = (await (
      await fetch(`${running.url}/hooks/sandbox`, { method: 'POST', body: '{"type":"old"}' })
    ).json()) as {
      id: string;
    };
    await eventually(() => down.requests.length >= 1, 'the first attempt');
    await api(running, '/api/forwards/gone/pause', 'POST');
    await running.close();

    // Started without the rule: its open delivery is cancelled, with the reason, and stays so.
    running = await start(PROVIDERS);
    const listed = await api<{ deliveries: Array<{ id: string; state: string; cancel_reason?: string }> }>(
      running,
      `/api/events/${old.id}/deliveries`,
    );
    expect(listed.body.deliveries).toMatchObject([
      { state: 'cancelled', cancel_reason: 'forward rule gone is no longer configured' },
    ]);
    const retried = await api<{ error?: { code: string } }>(
      running,
      `/api/deliveries/${listed.body.deliveries[0]?.id ?? ''}/retry`,
      'POST',
    );
    expect(retried.status).not.toBe(200);
    await running.close();

    // Re-added under the same name with a new target: not paused, the old event never sent there.
    running = await start(rule(fresh.url()));
    const forwards = await api<{ rules: Array<{ name: string; paused: boolean; pending: number }> }>(
      running,
      '/api/forwards',
    );
    expect(forwards.body.rules).toMatchObject([{ name: 'gone', paused: false, pending: 0 }]);
    const newer = (await (
      await fetch(`${running.url}/hooks/sandbox`, { method: 'POST', body: '{"type":"new"}' })
    ).json()) as {
      id: string;
    };
    await eventually(() => fresh.requests.length >= 1, 'the newer event at the new target');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(fresh.requests.map((r) => r.headers['x-switchboard-replay'])).toEqual([newer.id]);
    await running.close();
  });
});
