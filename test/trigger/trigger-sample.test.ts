import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Provider } from '../../generated/types.ts';
import { PRESET_NAMES } from '../../generated/constants.ts';
import { catalogEntry, credentialOf } from '../../src/verify/preset-registry.ts';
import { createServer, type Socket } from 'node:net';
import { listSamples } from '../../src/verify/sample-deliveries.ts';
import { prepareTrigger, triggerSample, TriggerUnreachableError } from '../../src/trigger/trigger-sample.ts';
import { startHarness, type Harness } from '../ingest/ingest-harness.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';
import { closedPort, startConsumer } from '../support/local-server.ts';

const WHSEC = `whsec_${Buffer.from('trigger-standard-webhooks-key-32').toString('base64')}`;

const PROVIDERS: Record<string, Provider> = {
  github: { preset: 'github', secret: ['gh-trigger-secret', 'gh-old'] },
  stripe: { preset: 'stripe', secret: 'whsec_trigger_stripe' },
  slack: { preset: 'slack', secret: 'slack-trigger-secret' },
  shopify: { preset: 'shopify', secret: 'shopify-trigger-secret' },
  'standard-webhooks': { preset: 'standard-webhooks', secret: WHSEC },
  linear: { preset: 'linear', secret: 'linear-trigger-secret' },
  generic: {
    preset: 'generic-hmac',
    secret: 'generic-trigger-secret',
    hmac: { header: 'X-Sig', signed: '{timestamp}.{body}', timestamp_header: 'X-Ts', encoding: 'base64' },
  },
  gitlab: { preset: 'gitlab', token: 'gitlab-trigger-token' },
  relay: { trust_mode: 'token', token: 'relay-token', token_header: 'X-Relay-Token' },
  open: { trust_mode: 'open' },
};

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({ providers: PROVIDERS });
});

afterAll(async () => {
  await harness?.close();
});

const provider = (name: string) => {
  const config = PROVIDERS[name];
  if (config === undefined) throw new Error(name);
  return webhookProvider(providersFrom({ [name]: config }), name);
};

describe('switchboard trigger', () => {
  const signedCases = [
    ['github', 'push', 'push'],
    ['github', 'pull_request', 'pull_request.opened'],
    ['github', 'issues', 'issues.opened'],
    ['stripe', 'payment_intent.succeeded', 'payment_intent.succeeded'],
    ['stripe', 'invoice.paid', 'invoice.paid'],
    ['slack', 'app_mention', 'app_mention'],
    ['shopify', 'orders/create', 'orders/create'],
    ['standard-webhooks', 'invoice.paid', 'invoice.paid'],
    ['linear', 'Issue.create', 'Issue.create'],
    ['generic', 'generic', 'order.shipped'],
  ] as const;

  it.each(signedCases)('sends %s %s signed so that ingest verifies it', async (name, sample, eventType) => {
    const result = await triggerSample({ provider: provider(name), sample, baseUrl: harness.url });
    expect(result.status, result.body).toBe(200);
    expect(result.sample).toBe(sample);
    const { id, duplicate } = JSON.parse(result.body) as { id: string; duplicate: boolean };
    expect(duplicate).toBe(false);
    expect(await harness.store.get(id)).toMatchObject({
      provider: name,
      verified: true,
      trustMode: 'signed',
      eventType,
    });
  });

  it('sends the token for token providers, and nothing for open ones', async () => {
    for (const [name, trustMode] of [
      ['gitlab', 'token'],
      ['relay', 'token'],
      ['open', 'open'],
    ] as const) {
      const result = await triggerSample({ provider: provider(name), baseUrl: harness.url });
      expect(result.status, `${name}: ${result.body}`).toBe(200);
      const { id } = JSON.parse(result.body) as { id: string };
      expect(await harness.store.get(id)).toMatchObject({ provider: name, trustMode, verified: false });
    }
  });

  it('makes every send a new event, not a deduplicated retry', async () => {
    const a = await triggerSample({ provider: provider('stripe'), baseUrl: harness.url });
    const b = await triggerSample({ provider: provider('stripe'), baseUrl: harness.url });
    expect(JSON.parse(a.body)).toMatchObject({ duplicate: false });
    expect(JSON.parse(b.body)).toMatchObject({ duplicate: false });
    expect(JSON.parse(a.body)).not.toEqual(JSON.parse(b.body));
  });

  it("produces signatures the providers' own libraries accept", async () => {
    const now = Date.now();
    const gh = prepareTrigger(provider('github'), 'push', now);
    expect(await octokitVerify('gh-trigger-secret', gh.body.toString(), gh.headers['x-hub-signature-256'] ?? '')).toBe(
      true,
    );
    expect(gh.headers['x-github-event']).toBe('push');

    const st = prepareTrigger(provider('stripe'), 'invoice.paid', now);
    const event = new Stripe('sk_test_x').webhooks.constructEvent(
      st.body,
      st.headers['stripe-signature'] ?? '',
      'whsec_trigger_stripe',
    );
    expect(event.type).toBe('invoice.paid');

    const sw = prepareTrigger(provider('standard-webhooks'), undefined, now);
    expect(new Webhook(WHSEC).verify(sw.body.toString(), sw.headers)).toMatchObject({ type: 'invoice.paid' });
  });

  it('uses a realistic, trimmed GitHub payload', async () => {
    const pr = prepareTrigger(provider('github'), 'pull_request', Date.now());
    const body = JSON.parse(pr.body.toString()) as {
      action: string;
      pull_request: { number: number; head: { ref: string } };
      repository: { full_name: string };
    };
    expect(body.action).toBe('opened');
    expect(body.pull_request.head.ref).toBeTruthy();
    expect(body.repository.full_name).toBe('Codertocat/Hello-World');
    expect(pr.body.length).toBeLessThan(8_000);
  });

  it('lists samples for every preset, defaulting to the first', () => {
    // Public-key presets have none: switchboard cannot sign for them (trigger-catalog.test.ts).
    for (const preset of PRESET_NAMES) {
      const asymmetric = credentialOf(catalogEntry(preset)) === 'public_key';
      expect(listSamples(preset).length > 0, preset).toBe(!asymmetric);
    }
    expect(listSamples('github').map((s) => s.name)).toEqual(['push', 'pull_request', 'issues']);
    expect(listSamples('stripe').map((s) => s.name)).toEqual(['payment_intent.succeeded', 'invoice.paid']);
  });

  it('refuses unknown samples, missing secrets and queue providers with clear messages', async () => {
    await expect(
      triggerSample({ provider: provider('github'), sample: 'deployment', baseUrl: harness.url }),
    ).rejects.toThrow(/no sample "deployment"; available: push, pull_request, issues/);
    await expect(
      triggerSample({
        provider: webhookProvider(providersFrom({ bare: { preset: 'stripe' } }), 'bare'),
        baseUrl: harness.url,
      }),
    ).rejects.toThrow(/no secret configured/);
    const [queue] = providersFrom({ q: { family: 'queue', channel: 'jobs' } });
    if (queue === undefined) throw new Error('no queue provider');
    await expect(triggerSample({ provider: queue, baseUrl: harness.url })).rejects.toThrow(/queue provider/);
    await expect(triggerSample({ provider: provider('open'), baseUrl: 'ftp://x' })).rejects.toThrow(/http/);
  });

  it('keeps a base URL path prefix', async () => {
    const relay = await startConsumer('127.0.0.1', (_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    try {
      const result = await triggerSample({ provider: provider('open'), baseUrl: relay.url('/sb/') });
      expect(relay.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /sb/hooks/open']);
      expect(result).toMatchObject({ status: 202, body: '{"ok":true}', url: relay.url('/sb/hooks/open') });
    } finally {
      await relay.close();
    }
  });

  it('names the URL and the cause when nothing answers: refused, or a timeout', async () => {
    const port = await closedPort();
    const refused = await triggerSample({ provider: provider('open'), baseUrl: `http://127.0.0.1:${port}` }).catch(
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(TriggerUnreachableError);
    expect((refused as Error).message).toBe(
      `could not reach switchboard at http://127.0.0.1:${port}/hooks/open: connection refused: nothing listens there`,
    );

    // A server that accepts the connection and never answers.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as { port: number }).port;
    try {
      const timedOut = await triggerSample({
        provider: provider('open'),
        baseUrl: `http://127.0.0.1:${silentPort}`,
        timeoutMs: 300,
      }).catch((err: unknown) => err);
      expect(timedOut).toBeInstanceOf(TriggerUnreachableError);
      expect((timedOut as Error).message).toBe(
        `could not reach switchboard at http://127.0.0.1:${silentPort}/hooks/open: no answer within 0.3 s (timeout)`,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
