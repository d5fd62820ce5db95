/**
 * A signature that does not cover the body is single-use (issue 37.2). Mailgun signs only
 * `timestamp + token` (HMAC-SHA256 with the webhook signing key, as Mailgun documents; no npm
 * package of Mailgun's is a devDependency, so the delivery is built as its documentation shows):
 * a seen `signature` object resent with other `event-data` within the tolerance window is 401,
 * stored unverified with "signature token already used", on this server and on a second one on
 * the same database; two racing deliveries with one token and other data get one 200 between them.
 */
import { randomBytes } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNonceClaims, startNonceExpiry } from '../../src/store/records/signature-nonces.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { silentLogger } from '../support/database.ts';
import { mailgunBody } from '../../catalog/mailgun/mailgun.case.ts';

const KEY = 'key-mailgun-signing-single-use-0123456789';
const CONFIG = JSON.stringify({ providers: { mailgun: { preset: 'mailgun', secret: KEY } } });

/** The same signature object with other event data: what anyone who saw one delivery can send. */
function withOtherData(original: Buffer, recipient: string): Buffer {
  const doc = JSON.parse(original.toString('utf8')) as { 'event-data': Record<string, unknown> };
  doc['event-data'] = { ...doc['event-data'], recipient, event: 'failed' };
  return Buffer.from(JSON.stringify(doc));
}

describe('a Mailgun signature token is single-use', () => {
  let first: ComposedServer;
  let second: ComposedServer;
  let pool: DatabasePool;

  beforeAll(async () => {
    first = await startComposedServer({ envToken: undefined, config: CONFIG });
    // The second server shares the first one's database, which stays the first one's to drop.
    second = await startComposedServer({ envToken: undefined, config: CONFIG, database: { url: first.databaseUrl } });
    pool = await createDatabasePool(first.databaseUrl, { maximumPoolSize: 2 });
  }, 90_000);

  afterAll(async () => {
    await pool?.end();
    await second?.close();
    await first?.close();
  });

  async function post(url: string, body: Buffer): Promise<{ status: number; text: string }> {
    const res = await fetch(`${url}/hooks/mailgun`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, text: await res.text() };
  }

  const stored = (recipient: string) =>
    pool.any(sql.type(z.object({ verified: z.boolean(), verify_detail: z.string() }))`
      SELECT verified, verify_detail FROM events
      WHERE provider = 'mailgun' AND convert_from(payload, 'UTF8') LIKE ${`%${recipient}%`}
    `);

  it('first delivery verified; its signature with other event-data is 401 and stored unverified, on either server', async () => {
    const original = mailgunBody(KEY, Date.now());
    expect((await post(first.running.url, original)).status).toBe(200);
    expect(await stored('alice@example.com')).toEqual([
      { verified: true, verify_detail: expect.stringMatching(/valid/) },
    ]);

    const forged = await post(first.running.url, withOtherData(original, 'mallory-1@example.com'));
    expect(forged.status).toBe(401);
    expect(forged.text).toContain('signature token already used');
    expect(await stored('mallory-1@example.com')).toEqual([
      { verified: false, verify_detail: 'signature token already used' },
    ]);

    // Another instance on the same database knows the token too.
    const elsewhere = await post(second.url, withOtherData(original, 'mallory-2@example.com'));
    expect(elsewhere.status).toBe(401);
    expect(await stored('mallory-2@example.com')).toEqual([
      { verified: false, verify_detail: 'signature token already used' },
    ]);

    // The same bytes again are the same delivery (a provider's retry): not a new event, not refused.
    expect((await post(second.url, original)).status).toBe(200);
    expect(await stored('alice@example.com')).toHaveLength(1);
  });

  it('two racing deliveries with one token and other data, one on each server: exactly one verified', async () => {
    for (let round = 0; round < 5; round++) {
      const original = mailgunBody(KEY, Date.now(), randomBytes(25).toString('hex'));
      const a = withOtherData(original, `race-a-${round}@example.com`);
      const b = withOtherData(original, `race-b-${round}@example.com`);
      const answers = await Promise.all([post(first.running.url, a), post(second.url, b)]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 401]);
      const rows = [...(await stored(`race-a-${round}@`)), ...(await stored(`race-b-${round}@`))];
      expect(rows.map((row) => row.verified).sort()).toEqual([false, true]);
    }
  });

  it('a claim lapses when it expires, and expired rows are deleted', async () => {
    const claim = createNonceClaims(pool);
    const token = randomBytes(8).toString('hex');
    const body = Buffer.from('{}');
    expect(await claim('mailgun', token, Date.now() - 1000, body)).toBe(true);
    expect(await claim('mailgun', token, Date.now() + 60_000, Buffer.from('{"other":1}'))).toBe(true);
    expect(await claim('mailgun', token, Date.now() + 60_000, Buffer.from('{"third":1}'))).toBe(false);
    expect(await claim('mailgun', `${token}-old`, Date.now() - 1000, body)).toBe(true);
    const job = startNonceExpiry({ pool, logger: silentLogger, intervalMs: 3_600_000 });
    try {
      expect(await job.runOnce()).toBeGreaterThanOrEqual(1);
    } finally {
      await job.stop();
    }
    const expired = await pool.oneFirst(
      sql.unsafe`SELECT count(*)::int FROM signature_nonces WHERE expires_at < now()`,
    );
    expect(expired).toBe(0);
  });
});
