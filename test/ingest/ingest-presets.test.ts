/**
 * Every signed preset over real HTTP, signed by the provider's own library where one exists
 * (@octokit/webhooks-methods, stripe, standardwebhooks) and by an independent implementation of the
 * provider's documented scheme where none is installed (Slack, Shopify, Linear, generic HMAC).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Provider } from '../../generated/types.ts';
import { post, startHarness, type Harness } from './ingest-harness.ts';

const require = createRequire(import.meta.url);
const stripe = new Stripe('sk_test_x');

function githubExample(name: string, action: string): unknown {
  const definitions = require('@octokit/webhooks-examples') as WebhookDefinition[];
  const examples = (definitions.find((d) => d.name === name)?.examples ?? []) as { action?: string }[];
  const example = examples.find((e) => e.action === action);
  if (example === undefined) throw new Error(`no ${name}.${action} example`);
  return example;
}

const hmacHex = (secret: string | Buffer, ...parts: (string | Buffer)[]): string => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
};
const hmacBase64 = (secret: string | Buffer, ...parts: (string | Buffer)[]): string => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('base64');
};

interface Signed {
  body: Buffer;
  headers: Record<string, string>;
}

interface PresetCase {
  preset: string;
  provider: (current: string, old: string) => Provider;
  current: string;
  old: string;
  wrong: string;
  /** A fresh delivery (new delivery id) signed with `secret` as if sent at `atMs`. */
  deliver(secret: string, atMs: number): Promise<Signed>;
  /** Whether the scheme signs a timestamp (so staleness can be tested). */
  timestamped: boolean;
  /** The header whose absence must give 400. */
  signatureHeader: string;
  eventType: string;
}

const WHSEC_CURRENT = `whsec_${Buffer.from('standard-webhooks-current-key-32b').toString('base64')}`;
const WHSEC_OLD = `whsec_${Buffer.from('standard-webhooks-old-key-32bytes').toString('base64')}`;
const WHSEC_WRONG = `whsec_${Buffer.from('standard-webhooks-wrong-key-32byt').toString('base64')}`;

const CASES: PresetCase[] = [
  {
    preset: 'github',
    provider: (current, old) => ({ preset: 'github', secret: [current, old] }),
    current: 'gh-current-secret',
    old: 'gh-old-secret',
    wrong: 'gh-wrong-secret',
    async deliver(secret) {
      const text = JSON.stringify(githubExample('issues', 'opened'));
      return {
        body: Buffer.from(text),
        headers: {
          'x-github-event': 'issues',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': await octokitSign(secret, text),
        },
      };
    },
    timestamped: false,
    signatureHeader: 'x-hub-signature-256',
    eventType: 'issues.opened',
  },
  {
    preset: 'stripe',
    provider: (current, old) => ({ preset: 'stripe', secret: [current, old] }),
    current: 'whsec_stripe_current',
    old: 'whsec_stripe_old',
    wrong: 'whsec_stripe_wrong',
    async deliver(secret, atMs) {
      const payload = JSON.stringify({
        id: `evt_${randomUUID().replaceAll('-', '')}`,
        object: 'event',
        type: 'payment_intent.succeeded',
        data: { object: { id: 'pi_123', object: 'payment_intent', amount: 2000, currency: 'usd' } },
      });
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: Math.floor(atMs / 1000) });
      return { body: Buffer.from(payload), headers: { 'stripe-signature': header } };
    },
    timestamped: true,
    signatureHeader: 'stripe-signature',
    eventType: 'payment_intent.succeeded',
  },
  {
    preset: 'slack',
    provider: (current, old) => ({ preset: 'slack', secret: [current, old] }),
    current: 'slack-current-signing-secret',
    old: 'slack-old-signing-secret',
    wrong: 'slack-wrong-signing-secret',
    async deliver(secret, atMs) {
      const ts = String(Math.floor(atMs / 1000));
      const body = Buffer.from(
        JSON.stringify({
          type: 'event_callback',
          event_id: `Ev${randomUUID().replaceAll('-', '').slice(0, 10).toUpperCase()}`,
          event: { type: 'app_mention', text: 'hi', user: 'U1', channel: 'C1' },
        }),
      );
      return {
        body,
        headers: { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${hmacHex(secret, `v0:${ts}:`, body)}` },
      };
    },
    timestamped: true,
    signatureHeader: 'x-slack-signature',
    eventType: 'app_mention',
  },
  {
    preset: 'shopify',
    provider: (current, old) => ({ preset: 'shopify', secret: [current, old] }),
    current: 'shpss_current',
    old: 'shpss_old',
    wrong: 'shpss_wrong',
    async deliver(secret) {
      // Shopify ids exceed 2^53, so the body is written as text, exactly as Shopify sends it.
      const body = Buffer.from(
        `{"id":820982911946154508,"email":"jon@example.com","total_price":"403.00","note":"${randomUUID()}"}`,
      );
      return {
        body,
        headers: {
          'x-shopify-topic': 'orders/create',
          'x-shopify-webhook-id': randomUUID(),
          'x-shopify-hmac-sha256': hmacBase64(secret, body),
        },
      };
    },
    timestamped: false,
    signatureHeader: 'x-shopify-hmac-sha256',
    eventType: 'orders/create',
  },
  {
    preset: 'standard-webhooks',
    provider: (current, old) => ({ preset: 'standard-webhooks', secret: [current, old] }),
    current: WHSEC_CURRENT,
    old: WHSEC_OLD,
    wrong: WHSEC_WRONG,
    async deliver(secret, atMs) {
      const id = `msg_${randomUUID().replaceAll('-', '')}`;
      const payload = JSON.stringify({
        type: 'invoice.paid',
        timestamp: new Date(atMs).toISOString(),
        data: { id: 'inv_1' },
      });
      const date = new Date(atMs);
      return {
        body: Buffer.from(payload),
        headers: {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(atMs / 1000)),
          'webhook-signature': new Webhook(secret).sign(id, date, payload),
        },
      };
    },
    timestamped: true,
    signatureHeader: 'webhook-signature',
    eventType: 'invoice.paid',
  },
  {
    preset: 'linear',
    provider: (current, old) => ({ preset: 'linear', secret: [current, old] }),
    current: 'lin_wh_current',
    old: 'lin_wh_old',
    wrong: 'lin_wh_wrong',
    async deliver(secret, atMs) {
      const body = Buffer.from(
        JSON.stringify({
          action: 'create',
          type: 'Issue',
          data: { id: randomUUID(), title: 'Bug' },
          webhookTimestamp: atMs,
        }),
      );
      return {
        body,
        headers: {
          'linear-delivery': randomUUID(),
          'linear-event': 'Issue',
          'linear-signature': hmacHex(secret, body),
        },
      };
    },
    timestamped: true,
    signatureHeader: 'linear-signature',
    eventType: 'Issue.create',
  },
  {
    preset: 'generic-hmac',
    provider: (current, old) => ({
      preset: 'generic-hmac',
      secret: [current, old],
      hmac: { header: 'X-Signature', prefix: 'sha256=', signed: '{timestamp}.{body}', timestamp_header: 'X-Timestamp' },
      external_id_from: 'header:X-Delivery',
    }),
    current: 'generic-current',
    old: 'generic-old',
    wrong: 'generic-wrong',
    async deliver(secret, atMs) {
      const ts = String(Math.floor(atMs / 1000));
      const body = Buffer.from(JSON.stringify({ type: 'build.finished', status: 'ok', run: randomUUID() }));
      return {
        body,
        headers: {
          'x-delivery': randomUUID(),
          'x-timestamp': ts,
          'x-signature': `sha256=${hmacHex(secret, `${ts}.`, body)}`,
        },
      };
    },
    timestamped: true,
    signatureHeader: 'x-signature',
    eventType: 'build.finished',
  },
];

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({
    providers: Object.fromEntries(CASES.map((c) => [c.preset, c.provider(c.current, c.old)])),
  });
});

afterAll(async () => {
  await harness?.close();
});

function flipOneByte(body: Buffer): Buffer {
  const copy = Buffer.from(body);
  const i = Math.floor(copy.length / 2);
  copy[i] = (copy[i] ?? 0) ^ 0x01;
  return copy;
}

describe.each(CASES)('preset $preset over HTTP', (c) => {
  const url = (): string => `${harness.url}/hooks/${c.preset}`;

  it('accepts a valid delivery with 200 and stores it verified', async () => {
    const { body, headers } = await c.deliver(c.current, Date.now());
    const res = await post(url(), body, headers);
    expect(res.status, res.text).toBe(200);
    const { id, duplicate } = res.json as { id: string; duplicate: boolean };
    expect(duplicate).toBe(false);
    const stored = await harness.store.get(id);
    expect(stored).toMatchObject({ provider: c.preset, trustMode: 'signed', verified: true, eventType: c.eventType });
    expect(stored?.verifyDetail).toMatch(/valid/);
    expect(stored?.payload.equals(body)).toBe(true);
  });

  it('rejects a wrong secret with 401 and records it unverified with the reason', async () => {
    const { body, headers } = await c.deliver(c.wrong, Date.now());
    const before = (await harness.rows(c.preset)).length;
    const res = await post(url(), body, headers);
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ error: { code: 'unauthenticated' } });
    const rows = await harness.rows(c.preset);
    expect(rows).toHaveLength(before + 1);
    const recorded = rows.findLast((r) => r.payload.equals(body));
    expect(recorded).toMatchObject({ verified: false, externalId: null });
    expect(recorded?.verifyDetail).toMatch(/signature mismatch/);
  });

  it('rejects a body with one byte changed', async () => {
    const { body, headers } = await c.deliver(c.current, Date.now());
    const tampered = flipOneByte(body);
    const res = await post(url(), tampered, headers);
    expect(res.status).toBe(401);
    const recorded = (await harness.rows(c.preset)).findLast((r) => r.payload.equals(tampered));
    expect(recorded).toMatchObject({ verified: false });
    expect(recorded?.verifyDetail).toMatch(/signature mismatch/);
  });

  it(
    c.timestamped
      ? 'rejects a stale timestamp'
      : 'signs no timestamp, so an hour-old delivery still verifies (dedupe is by delivery id)',
    async () => {
      const { body, headers } = await c.deliver(c.current, Date.now() - 3_600_000);
      const res = await post(url(), body, headers);
      if (!c.timestamped) {
        expect(res.status).toBe(200);
        return;
      }
      expect(res.status).toBe(401);
      const recorded = (await harness.rows(c.preset)).findLast((r) => r.payload.equals(body));
      expect(recorded).toMatchObject({ verified: false });
      expect(recorded?.verifyDetail).toMatch(/tolerance/);
    },
  );

  it('answers 400 naming the header when the signature header is missing, and stores nothing', async () => {
    const { body, headers } = await c.deliver(c.current, Date.now());
    delete headers[c.signatureHeader];
    const before = (await harness.rows(c.preset)).length;
    const res = await post(url(), body, headers);
    expect(res.status).toBe(400);
    expect((res.json as { error: { message: string } }).error.message.toLowerCase()).toContain(c.signatureHeader);
    expect(await harness.rows(c.preset)).toHaveLength(before);
  });

  it('accepts a delivery signed with the previous secret while it is still configured (rotation)', async () => {
    const { body, headers } = await c.deliver(c.old, Date.now());
    const res = await post(url(), body, headers);
    expect(res.status, res.text).toBe(200);
    const stored = await harness.store.get((res.json as { id: string }).id);
    expect(stored).toMatchObject({ verified: true });
    expect(stored?.verifyDetail).toMatch(/secret 2 of 2/);
  });
});
