/**
 * switchboard names the provider that just called (issue 41.2): a delivery to an open provider, or
 * to a route with no provider, whose headers carry a catalog provider's signature header is named
 * in the log, in GET /api/events/{id} (sender_hint) and, for the route with no provider, in its 404,
 * with the config that would check it. Signed by the providers' own packages, on the wire.
 */
import Stripe from 'stripe';
import { Webhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventDetail, ErrorEnvelope } from '../../generated/types.ts';
import { validateApiEventDetail } from '../../generated/validators.js';
import { createLogger } from '../../src/log/logger.ts';
import { REDACTED } from '../../src/sanitize/sanitize-headers.ts';
import { startApiTestServer, type ApiTestServer } from '../api/api-test-server.ts';

const stripe = new Stripe('sk_test_x');
const STRIPE_SECRET = 'whsec_sender_hint_test';
const STANDARD_WEBHOOKS_FAMILY = ['clerk', 'openai', 'polar', 'replicate', 'resend', 'standard-webhooks', 'svix'];

describe('naming the provider that just called', () => {
  let api: ApiTestServer;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const logger = createLogger({
      level: 'info',
      destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    api = await startApiTestServer({ logger });
  }, 60_000);

  afterAll(async () => {
    await api?.close();
  });

  const post = (path: string, body: string, headers: Record<string, string>): Promise<Response> =>
    fetch(`${api.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  async function detailOf(res: Response): Promise<ApiEventDetail> {
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const got = await fetch(`${api.url}/api/events/${id}`, { headers: { authorization: `Bearer ${api.token}` } });
    const detail = (await got.json()) as ApiEventDetail;
    expect(validateApiEventDetail(detail), JSON.stringify(validateApiEventDetail.errors)).toBe(true);
    return detail;
  }

  const logged = (message: string): Record<string, unknown> | undefined =>
    lines.find((line) => line['msg'] === message);

  it('names Stripe for a Stripe-signed delivery to an open provider: in /api and in the log, never the signature', async () => {
    const payload = JSON.stringify({ id: 'evt_hint_1', type: 'payment_intent.succeeded', object: 'event' });
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET });
    const detail = await detailOf(await post('/hooks/hooks', payload, { 'stripe-signature': signature }));

    const message = 'looks like a Stripe delivery: set preset: stripe and its secret';
    expect(detail.sender_hint).toEqual({
      presets: ['stripe'],
      message,
      config: "hooks: { preset: stripe, secret: '${STRIPE_WEBHOOK_SECRET}' }",
    });
    expect(detail.headers['stripe-signature']).toBe(REDACTED);
    expect(JSON.stringify(detail)).not.toContain(signature);
    const line = logged(message);
    expect(line).toMatchObject({ provider: 'hooks', presets: ['stripe'] });
    expect(JSON.stringify(lines)).not.toContain(signature);
  });

  it('names every Standard Webhooks sender for an svix-signature', async () => {
    const payload = JSON.stringify({ type: 'invoice.paid', data: { id: 'in_1' } });
    const svix = new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const id = 'msg_sender_hint';
    const at = new Date();
    const headers = {
      'svix-id': id,
      'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
      'svix-signature': svix.sign(id, at, payload),
    };
    const hint = (await detailOf(await post('/hooks/hooks', payload, headers))).sender_hint;

    expect(hint?.presets).toEqual(STANDARD_WEBHOOKS_FAMILY);
    expect(hint?.message).toBe(
      'looks like a delivery from Clerk, OpenAI, Polar, Replicate, Resend, Standard Webhooks, Svix: set the preset ' +
        'of the one that sent it (preset: clerk, preset: openai, preset: polar, preset: replicate, preset: resend, ' +
        'preset: standard-webhooks, preset: svix) and its secret',
    );
    const config = hint?.config.split('\n') ?? [];
    expect(config[0]).toBe("hooks: { preset: clerk, secret: '${CLERK_WEBHOOK_SECRET}' }");
    expect(config.slice(1).every((line) => line.startsWith('# or: hooks: { preset: '))).toBe(true);
    expect(config).toHaveLength(STANDARD_WEBHOOKS_FAMILY.length);
  });

  it('gives an ordinary unsigned POST no hint', async () => {
    const before = lines.length;
    const detail = await detailOf(await post('/hooks/hooks', '{"type":"ping"}', { 'x-request-id': 'plain' }));
    expect(detail).not.toHaveProperty('sender_hint');
    expect(lines.slice(before).some((line) => String(line['msg']).startsWith('looks like'))).toBe(false);
  });

  it('keeps the 404 of a route with no provider and adds the hint to it', async () => {
    const payload = JSON.stringify({ id: 'evt_hint_2', type: 'invoice.paid' });
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET });
    const res = await post('/hooks/payments', payload, { 'stripe-signature': signature });

    expect(res.status).toBe(404);
    const body = (await res.json()) as ErrorEnvelope;
    expect(body.error).toEqual({
      code: 'not_found',
      message:
        'no webhook provider at /hooks/payments; looks like a Stripe delivery: set preset: stripe and its secret, ' +
        "e.g. under providers: payments: { preset: stripe, secret: '${STRIPE_WEBHOOK_SECRET}' }",
    });
    expect(JSON.stringify(body)).not.toContain(signature);
    expect(logged('looks like a Stripe delivery: set preset: stripe and its secret')).toBeDefined();
    expect(lines.find((line) => line['path'] === '/hooks/payments')).toMatchObject({ presets: ['stripe'] });

    const plain = await post('/hooks/payments', payload, {});
    expect(plain.status).toBe(404);
    expect(((await plain.json()) as ErrorEnvelope).error.message).toBe('no webhook provider at /hooks/payments');
  });
});
