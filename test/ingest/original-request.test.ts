/**
 * What ingest keeps about the request a webhook arrived in (issue 18, item 4): the method, path and
 * query string the sender used, with secret-looking query values redacted before they reach the
 * database, the status switchboard answered (including the 503 of a commit confirmed too late),
 * and the one-line summary of the payload.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptedId, post, startHarness, type Harness } from './ingest-harness.ts';

const SECRET = 'original-request-secret';
const COMMIT_TIMEOUT_MS = 1_500;
let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({
    providers: {
      github: { preset: 'github', secret: SECRET, record_rejected: true },
      hooks: { trust_mode: 'open' },
    },
    commitTimeoutMs: COMMIT_TIMEOUT_MS,
  });
});
afterAll(() => harness?.close());

async function githubHeaders(body: string, secret = SECRET): Promise<Record<string, string>> {
  return {
    'x-github-event': 'pull_request',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': await octokitSign(secret, body),
  };
}

const pullRequest = JSON.stringify({
  action: 'opened',
  number: 42,
  pull_request: { number: 42, title: 'Speed up the login page' },
  repository: { full_name: 'octo/api' },
});

describe('the original request', () => {
  it('keeps method, path and query, with secret-looking values redacted, and the 200 answered', async () => {
    const query =
      'team=core&token=tok-SECRET-1&sig=SECRET-2&api_key=SECRET-3&Client%5FSecret=SECRET-4&debug&x=1&Authorization=SECRET-5';
    const res = await post(`${harness.url}/hooks/github?${query}`, pullRequest, await githubHeaders(pullRequest));
    expect(res.status).toBe(200);
    const stored = await harness.store.get(acceptedId(res));
    expect(stored?.request).toEqual({
      method: 'POST',
      path: '/hooks/github',
      query:
        'team=core&token=[redacted]&sig=[redacted]&api_key=[redacted]&Client%5FSecret=[redacted]&debug&x=1&Authorization=[redacted]',
      responseStatus: 200,
    });
    expect(stored?.summary).toBe('octo/api · opened #42 · Speed up the login page');
    // No secret reached the database, in any column.
    for (const row of await harness.rawRows()) expect(row).not.toMatch(/SECRET-\d/);
  });

  it('records the 401 answered to a delivery that failed its signature check', async () => {
    const res = await post(`${harness.url}/hooks/github`, pullRequest, await githubHeaders(pullRequest, 'wrong'));
    expect(res.status).toBe(401);
    const [rejected] = (await harness.rows('github')).filter((r) => r.request?.responseStatus === 401);
    expect(rejected?.request).toEqual({ method: 'POST', path: '/hooks/github', query: '', responseStatus: 401 });
    // Rejected deliveries get their summary too: it is the forgery's own text, shown next to its red badge.
    expect(rejected?.summary).toBe('octo/api · opened #42 · Speed up the login page');
  });

  it('records 503 when the commit is confirmed only after the sender was told to retry', async () => {
    const body = JSON.stringify({ type: 'slow.commit', n: randomUUID() });
    // Another transaction holds a lock that every insert into events waits for.
    const held = harness.db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`LOCK TABLE events IN SHARE MODE`);
      await delay(COMMIT_TIMEOUT_MS + 1_000);
    });
    await delay(100);
    const res = await post(`${harness.url}/hooks/hooks`, body);
    expect(res.status).toBe(503);
    await held;
    await expect
      .poll(
        async () => (await harness.rows('hooks')).find((r) => r.payload.toString() === body)?.request?.responseStatus,
        { timeout: 10_000, interval: 100 },
      )
      .toBe(503);
  });
});
