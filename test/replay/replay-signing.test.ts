import { createHmac, randomBytes } from 'node:crypto';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import { expectAppError, replayHarness, storeDelivery, type ReplayHarness } from './replay-test-kit.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

/*
 * Each replay goes to a consumer that checks the provider's signature the way a real consumer
 * does: with the provider's own library where one is installed (GitHub, Stripe, Standard
 * Webhooks), otherwise with an HMAC written here from the provider's documentation, independent
 * of the preset code that produced the signature.
 */

const SECRETS = {
  github: "It's a Secret to Everybody",
  stripe: 'whsec_test_5dKq0LkZ3p8b1f2c',
  slack: '8f742231b10e8888abcd99yyyzzz85a5',
  shopify: 'shpss_1234567890abcdef',
  standard: `whsec_${randomBytes(24).toString('base64')}`,
  linear: 'lin_wh_0123456789',
  generic: 'generic-shared-secret',
  token: 'tok-abcdef-123456',
  gitlab: 'glpat-webhook-token',
} as const;

const providers = providersFrom({
  github: { preset: 'github', secret: SECRETS.github },
  'github-rotated': { preset: 'github', secret: ['new-github-secret', 'old-github-secret'] },
  'github-unsigned': { preset: 'github', secret: SECRETS.github, replay: { resign: false } },
  'github-nosecret': { preset: 'github' },
  stripe: { preset: 'stripe', secret: SECRETS.stripe },
  slack: { preset: 'slack', secret: SECRETS.slack },
  shopify: { preset: 'shopify', secret: SECRETS.shopify },
  standard: { preset: 'standard-webhooks', secret: SECRETS.standard },
  linear: { preset: 'linear', secret: SECRETS.linear },
  generic: { preset: 'generic-hmac', secret: SECRETS.generic, hmac: { header: 'X-Signature', prefix: 'sha256=' } },
  token: { trust_mode: 'token', token: SECRETS.token, token_header: 'X-Custom-Token' },
  'token-default': { trust_mode: 'token', token: SECRETS.token },
  'token-unsent': { trust_mode: 'token', token: SECRETS.token, replay: { resign: false } },
  gitlab: { preset: 'gitlab', token: SECRETS.gitlab },
  postmark: { preset: 'postmark', username: 'hooks', password: ['postmark-pass-new', 'postmark-pass-old'] },
  open: { trust_mode: 'open' },
});

const ALL_SECRET_VALUES: string[] = [...Object.values(SECRETS), 'new-github-secret', 'old-github-secret'];

/** An hour before now: every stored signature is far outside any freshness window. */
const ORIGINAL_DELIVERY_MS = Date.now() - 3_600_000;

let db: TestDatabase;
let kit: ReplayHarness;
let consumer: Consumer;
/** The consumer's verdict on the last request, set by `verifier`. */
let verifier: (req: RecordedRequest) => boolean | Promise<boolean>;

beforeAll(async () => {
  db = await freshDatabase();
  kit = replayHarness(db, providers);
  verifier = () => true;
  consumer = await startConsumer('127.0.0.1', (req, res) => {
    void Promise.resolve()
      .then(() => verifier(req))
      .catch(() => false)
      .then((ok) => {
        res.statusCode = ok ? 200 : 401;
        res.end(ok ? 'accepted' : 'signature rejected');
      });
  });
});

afterAll(async () => {
  await kit.close();
  await consumer.close();
  await db.close();
});

afterEach(() => {
  consumer.requests.length = 0;
  verifier = () => true;
  // Whatever else happened, no secret or signature reached the log.
  const logged = kit.logs.text();
  for (const secret of ALL_SECRET_VALUES) expect(logged).not.toContain(secret);
});

/** Stores an original delivery, signed an hour ago the way the sender signs. */
async function storeSigned(
  name: string,
  body: Buffer,
  eventHeaders: string[],
  contentType = 'application/json',
  passed = true,
): Promise<string> {
  const config = webhookProvider(providers, name);
  const { preset } = config;
  const eventBag = Object.fromEntries(
    eventHeaders.flatMap((v, i, all) => (i % 2 === 0 ? [[v.toLowerCase(), all[i + 1] ?? '']] : [])),
  );
  const secret = config.secrets[0];
  const signature =
    preset.sign && secret !== undefined
      ? preset.sign({ body, secret, nowMs: ORIGINAL_DELIVERY_MS, headers: eventBag })
      : {};
  const { tokenHeader } = preset;
  const rawHeaders = [
    'Content-Type',
    contentType,
    ...eventHeaders,
    ...Object.entries(signature).flat(),
    ...(tokenHeader && secret !== undefined ? [tokenHeader, secret] : []),
  ];
  const stored = await storeDelivery(kit.store, config, { rawHeaders, body, passed });
  return stored.id;
}

async function replay(
  eventId: string,
  options: { unsigned?: boolean } = {},
): Promise<{ status: number | null; received: RecordedRequest }> {
  const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'signing-test', ...options });
  const received = consumer.requests.at(-1);
  if (!received) throw new Error('nothing arrived');
  return { status: result.response_status, received };
}

const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  if (typeof value !== 'string') throw new Error(`missing header ${name}`);
  return value;
};

const hmacHex = (secret: string, ...parts: (string | Buffer)[]): string => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
};

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

describe('re-signing on replay', () => {
  it("Replay passes the consumer's signature check: github via @octokit/webhooks-methods verify", async () => {
    const body = Buffer.from(JSON.stringify({ action: 'opened', issue: { number: 1347 } }));
    const id = await storeSigned('github', body, ['X-GitHub-Event', 'issues', 'X-GitHub-Delivery', 'd-1']);
    verifier = (req) => octokitVerify(SECRETS.github, req.body.toString('utf8'), header(req, 'x-hub-signature-256'));
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['x-hub-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it("Replay passes the consumer's signature check: stripe via Stripe webhooks.constructEvent (fresh timestamp)", async () => {
    const body = Buffer.from(
      JSON.stringify({ id: 'evt_1', object: 'event', type: 'payment_intent.succeeded', data: { object: {} } }, null, 2),
    );
    const id = await storeSigned('stripe', body, ['User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)']);
    const stripe = new Stripe('sk_test_x');
    verifier = (req) =>
      stripe.webhooks.constructEvent(req.body, header(req, 'stripe-signature'), SECRETS.stripe).id === 'evt_1';
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    const t = Number(/t=(\d+)/.exec(header(received, 'stripe-signature'))?.[1]);
    expect(Math.abs(t - nowSeconds())).toBeLessThanOrEqual(5);
  });

  it("Replay passes the consumer's signature check: standard-webhooks via standardwebhooks Webhook.verify, keeping the message id", async () => {
    const body = Buffer.from('{"type":"invoice.paid","data":{"id":"inv_1"}}');
    const id = await storeSigned('standard', body, ['webhook-id', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W']);
    verifier = (req) => {
      const headers = {
        'webhook-id': header(req, 'webhook-id'),
        'webhook-timestamp': header(req, 'webhook-timestamp'),
        'webhook-signature': header(req, 'webhook-signature'),
      };
      new Webhook(SECRETS.standard).verify(req.body, headers);
      return true;
    };
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['webhook-id']).toBe('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W');
    expect(Math.abs(Number(header(received, 'webhook-timestamp')) - nowSeconds())).toBeLessThanOrEqual(5);
    expect(received.headers['svix-id']).toBeUndefined();
  });

  it("Replay passes the consumer's signature check: standard-webhooks under svix-* names stays svix-*", async () => {
    const body = Buffer.from('{"type":"user.created"}');
    const id = await storeSigned('standard', body, ['svix-id', 'msg_svix_1']);
    const key = Buffer.from(SECRETS.standard.slice('whsec_'.length), 'base64');
    verifier = (req) => {
      const expected = createHmac('sha256', key)
        .update(`${header(req, 'svix-id')}.${header(req, 'svix-timestamp')}.`)
        .update(req.body)
        .digest('base64');
      return header(req, 'svix-signature') === `v1,${expected}` && header(req, 'svix-id') === 'msg_svix_1';
    };
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['webhook-id']).toBeUndefined();
  });

  it("Replay passes the consumer's signature check: slack by an independent v0 HMAC with a fresh timestamp", async () => {
    const body = Buffer.from(
      'token=x&team_id=T1&command=%2Fdeploy&text=prod&trigger_id=13345224609.738474920.8088930838d88f008e0',
    );
    const id = await storeSigned(
      'slack',
      body,
      ['X-Slack-Retry-Num', '1', 'X-Slack-Retry-Reason', 'http_timeout'],
      'application/x-www-form-urlencoded',
    );
    verifier = (req) => {
      const ts = header(req, 'x-slack-request-timestamp');
      const fresh = Math.abs(Number(ts) - nowSeconds()) <= 300;
      return fresh && header(req, 'x-slack-signature') === `v0=${hmacHex(SECRETS.slack, `v0:${ts}:`, req.body)}`;
    };
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['content-type']).toBe('application/x-www-form-urlencoded');
    // A replay is a new delivery, not Slack's retry: consumers that skip retries would drop it.
    expect(received.headers['x-slack-retry-num']).toBeUndefined();
    expect(received.headers['x-slack-retry-reason']).toBeUndefined();
  });

  it("Replay passes the consumer's signature check: shopify by an independent base64 HMAC", async () => {
    const body = Buffer.from('{"id":820982911946154500,"email":"jon@example.com"}');
    const id = await storeSigned('shopify', body, [
      'X-Shopify-Topic',
      'orders/create',
      'X-Shopify-Shop-Domain',
      'shop.myshopify.com',
      'X-Shopify-Webhook-Id',
      'b54557e4',
    ]);
    verifier = (req) =>
      header(req, 'x-shopify-hmac-sha256') === createHmac('sha256', SECRETS.shopify).update(req.body).digest('base64');
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['x-shopify-topic']).toBe('orders/create');
    expect(received.headers['x-shopify-webhook-id']).toBe('b54557e4');
  });

  it("Replay passes the consumer's signature check: linear by an independent hex HMAC of the body", async () => {
    const body = Buffer.from(
      JSON.stringify({ action: 'create', type: 'Issue', webhookTimestamp: ORIGINAL_DELIVERY_MS }),
    );
    const id = await storeSigned('linear', body, ['Linear-Delivery', 'ld-1', 'Linear-Event', 'Issue']);
    verifier = (req) => header(req, 'linear-signature') === hmacHex(SECRETS.linear, req.body);
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['linear-delivery']).toBe('ld-1');
  });

  it("Replay passes the consumer's signature check: generic-hmac with its configured header and prefix", async () => {
    const body = Buffer.from('{"kind":"thing.happened"}');
    const id = await storeSigned('generic', body, ['X-Event-Type', 'thing.happened']);
    verifier = (req) => header(req, 'x-signature') === `sha256=${hmacHex(SECRETS.generic, req.body)}`;
    const { status } = await replay(id);
    expect(status).toBe(200);
  });

  it('the consumer check is real: the same replay verified with another secret is rejected', async () => {
    const body = Buffer.from('{"action":"opened"}');
    const id = await storeSigned('github', body, ['X-GitHub-Event', 'issues']);
    verifier = (req) => octokitVerify('not-the-secret', req.body.toString('utf8'), header(req, 'x-hub-signature-256'));
    expect((await replay(id)).status).toBe(401);
  });

  it('signs with the first configured secret while secrets rotate', async () => {
    const body = Buffer.from('{"action":"closed"}');
    const id = await storeSigned('github-rotated', body, ['X-GitHub-Event', 'issues']);
    verifier = (req) =>
      octokitVerify('new-github-secret', req.body.toString('utf8'), header(req, 'x-hub-signature-256'));
    expect((await replay(id)).status).toBe(200);
  });

  it('replay.resign false sends no signature at all (the stored one is redacted), so a verifying consumer rejects it', async () => {
    const body = Buffer.from('{"action":"opened"}');
    const id = await storeSigned('github-unsigned', body, ['X-GitHub-Event', 'issues']);
    verifier = (req) => typeof req.headers['x-hub-signature-256'] === 'string';
    const { status, received } = await replay(id);
    expect(status).toBe(401);
    expect(received.headers['x-hub-signature-256']).toBeUndefined();
    expect(received.headers['x-hub-signature']).toBeUndefined();
    expect(received.headers['x-github-event']).toBe('issues');
    expect(JSON.stringify(received.rawHeaders)).not.toContain('[redacted]');
  });

  it('a signed provider without a configured secret replays unsigned', async () => {
    const id = await storeSigned('github-nosecret', Buffer.from('{}'), ['X-GitHub-Event', 'ping']);
    const { received } = await replay(id);
    expect(received.headers['x-hub-signature-256']).toBeUndefined();
  });
});

describe('tokens and open providers', () => {
  it('a token provider replays with its first configured token in the configured token header', async () => {
    const id = await storeSigned('token', Buffer.from('{"type":"build.done"}'), [
      'X-Event-Type',
      'build.done',
      'Authorization',
      `Bearer ${SECRETS.token}`,
    ]);
    verifier = (req) => req.headers['x-custom-token'] === SECRETS.token;
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers.authorization).toBeUndefined();
    expect(received.headers['x-event-type']).toBe('build.done');
  });

  it('a token provider without token_header uses X-Webhook-Token', async () => {
    const id = await storeSigned('token-default', Buffer.from('{}'), []);
    verifier = (req) => req.headers['x-webhook-token'] === SECRETS.token;
    expect((await replay(id)).status).toBe(200);
  });

  it('gitlab replays with X-Gitlab-Token and its event headers', async () => {
    const id = await storeSigned('gitlab', Buffer.from('{"object_kind":"push"}'), [
      'X-Gitlab-Event',
      'Push Hook',
      'X-Gitlab-Event-UUID',
      'u-1',
    ]);
    verifier = (req) => req.headers['x-gitlab-token'] === SECRETS.gitlab;
    const { status, received } = await replay(id);
    expect(status).toBe(200);
    expect(received.headers['x-gitlab-event']).toBe('Push Hook');
  });

  it('an HTTP Basic provider (postmark) replays with Authorization: Basic of the first password', async () => {
    const id = await storeSigned('postmark', Buffer.from('{"RecordType":"Delivery","MessageID":"m-1"}'), []);
    verifier = (req) =>
      req.headers.authorization === `Basic ${Buffer.from('hooks:postmark-pass-new').toString('base64')}`;
    expect((await replay(id)).status).toBe(200);
  });

  it('replay.resign false on a token provider sends no token', async () => {
    const id = await storeSigned('token-unsent', Buffer.from('{}'), []);
    const { received } = await replay(id);
    expect(received.headers['x-webhook-token']).toBeUndefined();
    expect(JSON.stringify(received.rawHeaders)).not.toContain(SECRETS.token);
  });

  it('an open provider replays with no credentials', async () => {
    const id = await storeSigned('open', Buffer.from('{"type":"x"}'), ['X-Event-Type', 'x']);
    const { received } = await replay(id);
    const names = Object.keys(received.headers);
    expect(names.filter((n) => /sign|token|auth/.test(n))).toEqual([]);
  });
});

describe('an event that failed its check on arrival', () => {
  const CREDENTIAL_HEADERS = /sign|token|auth|^webhook-(id|timestamp)$|^svix-/;

  it.each(['github', 'stripe', 'slack', 'shopify', 'standard', 'linear', 'generic'])(
    'a %s delivery whose signature failed is refused, naming the rule and unsigned: true, with nothing sent',
    async (name) => {
      const id = await storeSigned(name, Buffer.from('{"forged":true}'), [], 'application/json', false);
      const before = consumer.connections;
      await expectAppError(
        kit.service().replay({ eventId: id, targetUrl: consumer.url(), caller: 'signing-test' }),
        'invalid_argument',
        /failed signature verification on arrival; replaying it signed would make it look genuine\. Pass `unsigned: true`/,
      );
      expect(consumer.connections).toBe(before);
    },
  );

  it.each([
    ['token', 'x-custom-token', SECRETS.token],
    ['gitlab', 'x-gitlab-token', SECRETS.gitlab],
  ])(
    'a %s delivery whose token did not match is refused, then sent with no token at all when unsigned',
    async (name, tokenHeader, token) => {
      const id = await storeSigned(name, Buffer.from('{"type":"build.done"}'), [], 'application/json', false);
      await expectAppError(
        kit.service().replay({ eventId: id, targetUrl: consumer.url(), caller: 'signing-test' }),
        'invalid_argument',
        /did not pass its token check on arrival; replaying it with the token would make it look genuine/,
      );
      expect(consumer.requests).toHaveLength(0);
      const { received } = await replay(id, { unsigned: true });
      expect(received.body.toString()).toBe('{"type":"build.done"}');
      expect(received.headers[tokenHeader]).toBeUndefined();
      expect(JSON.stringify(received.rawHeaders)).not.toContain(token);
    },
  );

  it('unsigned: true sends a forged signed event byte for byte with no signature, and the audit row says unsigned', async () => {
    const body = Buffer.from('{"id":"evt_forged","type":"payment_intent.succeeded"}');
    const id = await storeSigned('stripe', body, [], 'application/json', false);
    verifier = (req) => {
      Stripe.webhooks.constructEvent(req.body.toString('utf8'), header(req, 'stripe-signature'), SECRETS.stripe);
      return true;
    };
    const { status, received } = await replay(id, { unsigned: true });
    expect(status).toBe(401);
    expect(received.body.equals(body)).toBe(true);
    expect(Object.keys(received.headers).filter((n) => CREDENTIAL_HEADERS.test(n))).toEqual([]);
    const [row] = await kit.attempts.listForEvent(id);
    expect(row).toMatchObject({ delivered: true, unsigned: true });
    const line = (kit.logs.lines as { replay?: Record<string, unknown> }[]).find((l) => l.replay?.['eventId'] === id);
    expect(line?.replay).toMatchObject({ credentials: 'none', unsigned: true });
  });

  it('unsigned: true on a verified event sends it without a signature too', async () => {
    const id = await storeSigned('github', Buffer.from('{"action":"opened"}'), ['X-GitHub-Event', 'issues']);
    const { received } = await replay(id, { unsigned: true });
    expect(received.headers['x-hub-signature-256']).toBeUndefined();
    expect(received.headers['x-github-event']).toBe('issues');
    const [row] = await kit.attempts.listForEvent(id);
    expect(row).toMatchObject({ unsigned: true });
  });

  it('a verified event replayed normally is recorded as not unsigned', async () => {
    const id = await storeSigned('github', Buffer.from('{"action":"closed"}'), ['X-GitHub-Event', 'issues']);
    verifier = (req) => octokitVerify(SECRETS.github, req.body.toString('utf8'), header(req, 'x-hub-signature-256'));
    expect((await replay(id)).status).toBe(200);
    const [row] = await kit.attempts.listForEvent(id);
    expect(row).toMatchObject({ unsigned: false });
  });

  it('an event stored while its provider was open is never signed, even after the provider became signed', async () => {
    const openConfig = webhookProvider(providersFrom({ github: { trust_mode: 'open' } }), 'github');
    const stored = await storeDelivery(kit.store, openConfig, {
      rawHeaders: ['Content-Type', 'application/json'],
      body: Buffer.from('{"arrived":"open"}'),
    });
    const { received } = await replay(stored.id);
    expect(received.headers['x-hub-signature-256']).toBeUndefined();
  });
});
