/**
 * Scale-out: two switchboard processes on one PostgreSQL, started at the same moment on an empty
 * database (the migrations must be applied once, by whichever wins the advisory lock, and the
 * other must wait rather than fail). Then:
 *   - a webhook received by A reaches B's live stream (GET /api/stream on B) and B's MCP resource
 *     subscribers (official SDK Client: resources/subscribe → notifications/resources/updated),
 *     through PostgreSQL NOTIFY;
 *   - list cursors work across instances: page 1 from A, page 2 from B with A's cursor, and so on,
 *     give exactly the listing one instance gives, with no gap and no repeat.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeGithubDelivery, makePayload, seededRandom } from '../../bench/load-driver.ts';
import { loadMigrations } from '../../src/store/database/migrate.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { randomToken, spawnSwitchboard, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';
import { callTool, connectMcp, openEventStream, waitFor } from './support/clients.ts';
import { postGithubDelivery } from '../support/wire.ts';

const SECRET = `scale-secret-${randomBytes(8).toString('hex')}`;
const token = randomToken();
const config = {
  providers: { github: { preset: 'github', secret: SECRET } },
  rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
};

let db: TestDatabase;
let a: SpawnedSwitchboard;
let b: SpawnedSwitchboard;
let mcpA: Client;
let mcpB: Client;

beforeAll(async () => {
  // Unmigrated: both instances race to migrate it.
  db = await freshDatabase({ migrate: false });
  [a, b] = await Promise.all([
    spawnSwitchboard({ config, databaseUrl: db.url, token, logLevel: 'info' }),
    spawnSwitchboard({ config, databaseUrl: db.url, token, logLevel: 'info' }),
  ]);
  [mcpA, mcpB] = await Promise.all([
    connectMcp(a.mcpUrl, token, 'instance-a'),
    connectMcp(b.mcpUrl, token, 'instance-b'),
  ]);
});

afterAll(async () => {
  await Promise.all([mcpA?.close().catch(() => undefined), mcpB?.close().catch(() => undefined)]);
  await Promise.all([a?.stop(), b?.stop()]);
  a?.cleanup();
  b?.cleanup();
  await db?.close();
});

let counter = 0;
async function deliver(to: SpawnedSwitchboard): Promise<string> {
  counter += 1;
  const delivery = await makeGithubDelivery(SECRET, makePayload(seededRandom(counter), counter));
  const response = await postGithubDelivery(to.url, delivery);
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

describe('two instances on one database', () => {
  it('both started on an empty database; the migrations were applied exactly once', async () => {
    const shipped = (await loadMigrations()).map((m) => m.version);
    expect(shipped.length).toBeGreaterThanOrEqual(4);
    const versions = await db.pool.anyFirst(sql.unsafe`SELECT version FROM schema_migrations ORDER BY version`);
    expect(versions.map(Number)).toEqual(shipped);
    const applied = [...a.logLines(), ...b.logLines()].filter((l) => l.msg === 'applied migration');
    expect(applied.map((l) => Number(l.version)).sort((x, y) => x - y)).toEqual(shipped);
    for (const child of [a, b]) expect((await fetch(`${child.url}/healthz`)).status).toBe(200);
  });

  it("a webhook received by A reaches B's live stream and B's MCP resource subscribers", async () => {
    const stream = await openEventStream(b.url, token);
    const updates: string[] = [];
    mcpB.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      updates.push(notification.params.uri);
    });
    await mcpB.subscribeResource({ uri: 'switchboard://events/recent' });
    try {
      expect(stream.status).toBe(200);
      const id = await deliver(a);

      const message = await stream.waitForMessage((m) => m.id === id, 5_000);
      expect(message.event).toBe('event');
      expect(JSON.parse(message.data)).toMatchObject({ id, provider: 'github', verified: true });

      await waitFor(
        'notifications/resources/updated on B',
        () => (updates.includes('switchboard://events/recent') ? true : undefined),
        {
          timeoutMs: 5_000,
          intervalMs: 50,
        },
      );
      const read = await mcpB.readResource({ uri: 'switchboard://events/recent' });
      const text = read.contents[0] && 'text' in read.contents[0] ? String(read.contents[0].text) : '{}';
      expect((JSON.parse(text) as { events: Array<{ id: string }> }).events.map((e) => e.id)).toContain(id);
    } finally {
      stream.close();
      await mcpB.unsubscribeResource({ uri: 'switchboard://events/recent' }).catch(() => undefined);
    }
  });

  it('pages across instances: page 1 from A, page 2 from B with A’s cursor, page 3 from A with B’s', async () => {
    for (let i = 0; i < 16; i += 1) await deliver(i % 2 === 0 ? a : b);
    const whole = await callTool(mcpA, 'list_webhook_events', { limit: 100 });
    if (!whole.ok) throw new Error(whole.error.message);
    const expected = (whole.value.events as Array<{ id: string }>).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(15);

    const seen: string[] = [];
    let cursor: string | undefined;
    const clients = [mcpA, mcpB];
    for (let page = 0; page < 3; page += 1) {
      const outcome = await callTool(clients[page % 2] as Client, 'list_webhook_events', {
        limit: 5,
        ...(cursor ? { cursor } : {}),
      });
      if (!outcome.ok) throw new Error(`page ${page + 1}: ${outcome.error.code} ${outcome.error.message}`);
      seen.push(...(outcome.value.events as Array<{ id: string }>).map((e) => e.id));
      cursor = outcome.value.next_cursor as string | undefined;
      expect(cursor, `page ${page + 1} has a next cursor`).toBeTypeOf('string');
    }
    expect(seen).toEqual(expected.slice(0, 15));

    // And over the HTTP API too: A's cursor on B.
    const first = (await (
      await fetch(`${a.url}/api/events?limit=4`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      events: Array<{ id: string }>;
      next_cursor?: string;
    };
    const second = (await (
      await fetch(`${b.url}/api/events?limit=4&cursor=${encodeURIComponent(first.next_cursor ?? '')}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { events: Array<{ id: string }> };
    expect([...first.events, ...second.events].map((e) => e.id)).toEqual(expected.slice(0, 8));
  });
});
