/**
 * Duplicate JSON keys in body-signed deliveries (issue 37.7). Mailgun and Adyen carry their
 * signature or signed fields in the JSON body; switchboard reads an object that repeats a key
 * last-wins, a consumer's parser may read it first-wins and see the unsigned copy. Such a body is
 * refused with 400 and recorded unverified, naming the key; the same delivery without the repeat
 * passes. Built on the wire, with Adyen's own HmacValidator signing the items.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabasePool } from '../../src/store/database/database.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { adyenBody, adyenCase, adyenItem } from '../../catalog/adyen/adyen.case.ts';
import { mailgunBody, mailgunCase } from '../../catalog/mailgun/mailgun.case.ts';

/** The text with `"key":` repeated once more inside the object that holds `marker`, by hand. */
function repeatKey(body: Buffer, find: string, extra: string): Buffer {
  const text = body.toString('utf8');
  if (!text.includes(find)) throw new Error(`no ${find} in the body`);
  return Buffer.from(text.replace(find, `${extra},${find}`));
}

describe('a body-signed delivery whose JSON repeats a key', () => {
  let composed: ComposedServer;
  let pool: DatabasePool;

  beforeAll(async () => {
    const providers = {
      mailgun: { preset: 'mailgun', secret: mailgunCase.secret },
      adyen: { preset: 'adyen', secret: adyenCase.secret },
    };
    composed = await startComposedServer({ envToken: undefined, config: JSON.stringify({ providers }) });
    pool = await createDatabasePool(composed.databaseUrl, { maximumPoolSize: 1 });
  }, 60_000);

  afterAll(async () => {
    await pool?.end();
    await composed?.close();
  });

  async function post(name: string, body: Buffer): Promise<{ status: number; text: string }> {
    const res = await fetch(`${composed.running.url}/hooks/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, text: await res.text() };
  }

  const stored = (provider: string, marker: string) =>
    pool.any(sql.type(z.object({ verified: z.boolean(), verify_detail: z.string() }))`
      SELECT verified, verify_detail FROM events
      WHERE provider = ${provider} AND convert_from(payload, 'UTF8') LIKE ${`%${marker}%`}
    `);

  it('mailgun: a second event-data (top level) or a second token (in the signature object) is 400 and recorded', async () => {
    const signed = mailgunBody(mailgunCase.secret, Date.now());
    const topLevel = repeatKey(signed, '"event-data":', '"event-data":{"event":"dup-top","recipient":"x@example.com"}');
    const answer = await post('mailgun', topLevel);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('duplicate JSON key \\"event-data\\"');
    expect(await stored('mailgun', 'dup-top')).toEqual([
      { verified: false, verify_detail: expect.stringMatching(/^duplicate JSON key "event-data"/) },
    ]);

    const nested = repeatKey(mailgunBody(mailgunCase.secret, Date.now()), '"token":', '"token":"dup-nested"');
    expect((await post('mailgun', nested)).status).toBe(400);
    expect(await stored('mailgun', 'dup-nested')).toEqual([
      { verified: false, verify_detail: expect.stringMatching(/^duplicate JSON key "token"/) },
    ]);

    // The same delivery without the repeat passes.
    expect((await post('mailgun', signed)).status).toBe(200);
  });

  it('adyen: an item with a second amount is 400 and recorded; without it, 200', async () => {
    const body = adyenBody([adyenItem(adyenCase.secret, { merchantReference: 'dup-adyen' })]);
    const doubled = repeatKey(body, '"amount":', '"amount":{"value":1,"currency":"EUR"}');
    expect((await post('adyen', doubled)).status).toBe(400);
    expect(await stored('adyen', 'dup-adyen')).toEqual([
      { verified: false, verify_detail: expect.stringMatching(/^duplicate JSON key "amount"/) },
    ]);
    expect((await post('adyen', body)).status).toBe(200);
  });
});
