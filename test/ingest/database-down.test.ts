/**
 * The database goes away under a running ingest: deliveries must get 503 (never a 2xx) so the
 * provider retries, and ingest must recover when the database returns.
 */
import { randomUUID } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import type { DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { createEventStore } from '../../src/store/events/pg-event-store.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { post, startHarness, type Harness } from './ingest-harness.ts';
import { proxyInFrontOf, type ControlledProxy } from '../support/tcp-proxy.ts';

const SECRET = 'db-down-secret';

let db: TestDatabase;
let proxy: ControlledProxy;
let proxiedPool: DatabasePool;
let harness: Harness;

beforeAll(async () => {
  db = await freshDatabase();
  proxy = await proxyInFrontOf(db.url);
  proxiedPool = await createDatabasePool(proxy.via(db.url), { connectionTimeoutMs: 1_000, maximumPoolSize: 4 });
  harness = await startHarness({
    providers: { github: { preset: 'github', secret: SECRET } },
    db,
    store: createEventStore(proxiedPool),
    commitTimeoutMs: 3_000,
  });
});

afterAll(async () => {
  await harness?.close();
  await proxiedPool?.end().catch(() => undefined);
  await proxy?.close();
  await db?.close();
});

async function deliver(): Promise<{ status: number; retryAfter: string | null; delivery: string; text: string }> {
  const text = JSON.stringify({ action: 'opened', n: randomUUID() });
  const delivery = randomUUID();
  const res = await post(`${harness.url}/hooks/github`, text, {
    'x-github-event': 'issues',
    'x-github-delivery': delivery,
    'x-hub-signature-256': await octokitSign(SECRET, text),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), delivery, text: res.text };
}

describe('database unavailable', () => {
  it('answers 503 with Retry-After to every delivery while the database is unreachable, then recovers', async () => {
    expect((await deliver()).status).toBe(200);

    await proxy.down();
    const during = await Promise.all(Array.from({ length: 8 }, () => deliver()));
    for (const answer of during) {
      expect(answer.status, answer.text).toBe(503);
      expect(answer.retryAfter).toBe('5');
      expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'unavailable' } });
    }
    // None of them reached the database (checked directly, not through the proxy).
    const stored = await harness.rows('github');
    for (const answer of during) expect(stored.some((r) => r.externalId === answer.delivery)).toBe(false);

    await proxy.up();
    await expect.poll(async () => (await deliver()).status, { timeout: 15_000, interval: 250 }).toBe(200);
  });
});
