import { once } from 'node:events';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EventDetail, ReplayResult } from '../../generated/types.ts';
import { validateReplayWebhookEventOutput } from '../../generated/validators.js';
import { systemResolver } from '../../src/outbound/target-policy/resolve-target.ts';
import { replaySigned } from '../../src/replay/replay-signed.ts';
import { createReplayAttemptRepository } from '../../src/store/records/replay-attempt-repository.ts';
import { closedPort, startConsumer, type Consumer } from '../support/local-server.ts';
import { postJson } from '../support/wire.ts';
import {
  GITHUB_SECRET,
  HOOK_TOKEN,
  STANDARD_PROVIDERS,
  startMcpHarness,
  type Harness,
} from './support/switchboard-harness.ts';
import { expectReplaySigned } from './support/replay-signing.ts';
import { callError, callOk } from './support/tool-calls.ts';
import { deliverGithub, deliverOpen, deliverToken } from './support/webhooks.ts';

let consumer: Consumer;
let h: Harness;
const lookups: string[] = [];
const connects: string[] = [];

beforeAll(async () => {
  consumer = await startConsumer();
  h = await startMcpHarness({
    config: { replay: { timeout_ms: 500 }, rate_limits: { replay: { capacity: 50, refill_per_second: 1 } } },
    replayObserver: {
      resolver: (hostname) => {
        lookups.push(hostname);
        return systemResolver(hostname);
      },
      onConnect: (attempt) => connects.push(`${attempt.address}:${attempt.port}`),
    },
  });
});

afterEach(() => {
  consumer.handle((_req, res) => res.end('ok'));
});

afterAll(async () => {
  await h?.close();
  await consumer?.close();
});

describe('replay_webhook_event', () => {
  it('No target and no default is an error, not a guess: invalid_argument with no DNS lookup or outbound request', async () => {
    const client = await h.connect();
    const { id } = await deliverOpen(h.origin, '{"type":"ping"}');
    const before = { lookups: lookups.length, connects: connects.length, consumer: consumer.connections };
    const error = await callError(client, 'replay_webhook_event', { id });
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(/target/);
    expect({ lookups: lookups.length, connects: connects.length, consumer: consumer.connections }).toEqual(before);
  });

  it('Non-http scheme is rejected before any request: file:, gopher:, ftp: and data: are invalid_argument', async () => {
    const client = await h.connect();
    const { id } = await deliverOpen(h.origin, '{"type":"ping"}');
    const port = new URL(consumer.url()).port;
    const before = { lookups: lookups.length, connects: connects.length, consumer: consumer.connections };
    for (const target of [
      'file:///etc/passwd',
      `gopher://127.0.0.1:${port}/_POST`,
      `ftp://127.0.0.1:${port}/x`,
      'data:text/plain,hi',
      'javascript:alert(1)',
    ]) {
      const error = await callError(client, 'replay_webhook_event', { id, target_url: target });
      expect(error.code, target).toBe('invalid_argument');
    }
    expect({ lookups: lookups.length, connects: connects.length, consumer: consumer.connections }).toEqual(before);
  });

  it('Downstream non-2xx is reported, not raised: delivered true with the consumer status', async () => {
    const client = await h.connect();
    const { id } = await deliverOpen(h.origin, '{"type":"ping","n":1}');
    consumer.handle((_req, res) => {
      res.statusCode = 503;
      res.end('try later');
    });
    const result = await callOk<ReplayResult>(client, 'replay_webhook_event', { id, target_url: consumer.url() });
    expect(validateReplayWebhookEventOutput(result)).toBe(true);
    expect(result).toMatchObject({ id, target_url: consumer.url(), delivered: true, response_status: 503 });
    expect(result.response_ms).toBeGreaterThanOrEqual(0);
    expect(consumer.requests.at(-1)?.body.toString()).toBe('{"type":"ping","n":1}');
  });

  it('Unreachable target is replay_failed: refused connection and a target that never answers within the timeout', async () => {
    const client = await h.connect();
    const { id } = await deliverOpen(h.origin, '{"type":"ping"}');
    const refused = await callError(client, 'replay_webhook_event', {
      id,
      target_url: `http://127.0.0.1:${await closedPort()}/x`,
    });
    expect(refused.code).toBe('replay_failed');

    const silent: NetServer = createNetServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const started = performance.now();
      const timedOut = await callError(client, 'replay_webhook_event', {
        id,
        target_url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/x`,
      });
      expect(timedOut.code).toBe('replay_failed');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      silent.close();
    }
  });

  it("Replay passes the consumer's signature check: a GitHub event re-signed with the provider secret verifies", async () => {
    const client = await h.connect();
    const payload = JSON.stringify({ action: 'opened', issue: { number: 42 } });
    const { id, status } = await deliverGithub(h.origin, payload, { event: 'issues' });
    expect(status).toBe(200);
    consumer.handle((req, res) => {
      const signature = String(req.headers['x-hub-signature-256'] ?? '');
      void verifyGithub(GITHUB_SECRET, req.body.toString('utf8'), signature).then(
        (ok) => {
          res.statusCode = ok ? 204 : 401;
          res.end();
        },
        () => {
          res.statusCode = 400;
          res.end();
        },
      );
    });
    const result = await callOk<ReplayResult>(client, 'replay_webhook_event', { id, target_url: consumer.url() });
    expect(result).toMatchObject({ delivered: true, response_status: 204 });
    const received = consumer.requests.at(-1);
    expect(received?.body.toString('utf8')).toBe(payload);
    expect(received?.headers['x-github-event']).toBe('issues');
  });
});

describe('what the consumer answered', () => {
  it("Replay reports the consumer's answer excerpt: the first 2 KiB of a text answer with its content type, in the result and the history; none for a binary answer", async () => {
    const client = await h.connect();
    const attempts = createReplayAttemptRepository(h.db.pool);
    const { id } = await deliverOpen(h.origin, '{"type":"order.created","n":7}');
    const failure = JSON.stringify({ error: "TypeError: cannot read properties of undefined (reading 'sku')" });
    consumer.handle((_req, res) => {
      res.statusCode = 500;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(failure);
    });
    const failed = await callOk<ReplayResult>(client, 'replay_webhook_event', { id, target_url: consumer.url() });
    expect(validateReplayWebhookEventOutput(failed)).toBe(true);
    expect(failed).toMatchObject({
      delivered: true,
      response_status: 500,
      response_excerpt: failure,
      response_content_type: 'application/json; charset=utf-8',
    });
    const [latest] = await attempts.listForEvent(id);
    expect(latest).toMatchObject({
      response_excerpt: failure,
      response_content_type: 'application/json; charset=utf-8',
    });

    // A long answer is cut to 2 KiB and marked with an ellipsis.
    consumer.handle((_req, res) => {
      res.statusCode = 422;
      res.setHeader('content-type', 'text/plain');
      res.end(`${'é'.repeat(3000)}`);
    });
    const long = await callOk<ReplayResult>(client, 'replay_webhook_event', { id, target_url: consumer.url() });
    expect(long.response_excerpt?.endsWith('…')).toBe(true);
    expect(Buffer.byteLength((long.response_excerpt ?? '').slice(0, -1))).toBeLessThanOrEqual(2048);
    expect(long.response_excerpt?.startsWith('ééé')).toBe(true);

    // Bytes that are not UTF-8 are written \xNN and NUL \u0000 (issue 26.2: storable excerpts).
    consumer.handle((_req, res) => {
      res.statusCode = 502;
      res.setHeader('content-type', 'application/octet-stream');
      res.end(Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28]));
    });
    const binary = await callOk<ReplayResult>(client, 'replay_webhook_event', { id, target_url: consumer.url() });
    expect(binary).toMatchObject({
      response_status: 502,
      response_content_type: 'application/octet-stream',
      response_excerpt: '\\xff\\xfe\\u0000\\xc3(',
    });
    expect((await attempts.listForEvent(id))[0]?.response_excerpt).toBe(binary.response_excerpt);
  });
});

describe('trust is never laundered by replay', () => {
  it('Replaying an event that failed its check is refused unless unsigned: a forged Stripe event and a wrong token are refused, then sent bare with unsigned: true', async () => {
    const client = await h.connect();
    const attempts = createReplayAttemptRepository(h.db.pool);
    const forged = JSON.stringify({ id: 'evt_forged', type: 'payment_intent.succeeded', data: { amount: 999999 } });
    const rejected = await fetch(`${h.origin}/hooks/stripe`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=deadbeef`,
      },
      body: forged,
    });
    expect(rejected.status).toBe(401);
    const wrongToken = await fetch(`${h.origin}/hooks/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-webhook-token': 'not-the-token' },
      body: '{"type":"deploy"}',
    });
    expect(wrongToken.status).toBe(401);
    const listed = await callOk<{ events: Array<{ id: string; provider: string; verified: boolean }> }>(
      client,
      'list_webhook_events',
      { limit: 50 },
    );
    const stripeId = listed.events.find((e) => e.provider === 'stripe')?.id ?? '';
    const hookId = listed.events.find((e) => e.provider === 'hook')?.id ?? '';
    const stripeDetail = await callOk<EventDetail>(client, 'get_webhook_event', { id: stripeId });
    expect(stripeDetail).toMatchObject({ trust_mode: 'signed', verified: false, passed_check: false });
    expect(await callOk<EventDetail>(client, 'get_webhook_event', { id: hookId })).toMatchObject({
      trust_mode: 'token',
      passed_check: false,
    });

    const before = { requests: consumer.requests.length, connections: consumer.connections, lookups: lookups.length };
    const refused = await callError(client, 'replay_webhook_event', { id: stripeId, target_url: consumer.url() });
    expect(refused.code).toBe('invalid_argument');
    expect(refused.message).toBe(
      'this event failed signature verification on arrival; replaying it signed would make it look genuine. Pass `unsigned: true` to send the stored bytes without any signature or token.',
    );
    const refusedToken = await callError(client, 'replay_webhook_event', { id: hookId, target_url: consumer.url() });
    expect(refusedToken.code).toBe('invalid_argument');
    expect(refusedToken.message).toMatch(/did not pass its token check on arrival.*`unsigned: true`/);
    // Refused before anything touched the network.
    expect({ requests: consumer.requests.length, connections: consumer.connections, lookups: lookups.length }).toEqual(
      before,
    );

    const sent = await callOk<ReplayResult>(client, 'replay_webhook_event', {
      id: stripeId,
      target_url: consumer.url(),
      unsigned: true,
    });
    expect(sent).toMatchObject({ delivered: true, response_status: 200 });
    const bare = consumer.requests.at(-1);
    expect(bare?.body.toString('utf8')).toBe(forged);
    expect(bare?.headers['stripe-signature']).toBeUndefined();
    await callOk(client, 'replay_webhook_event', { id: hookId, target_url: consumer.url(), unsigned: true });
    expect(consumer.requests.at(-1)?.headers['x-webhook-token']).toBeUndefined();
    expect(JSON.stringify(consumer.requests.at(-1)?.headers)).not.toContain(HOOK_TOKEN);

    expect(
      (await attempts.listForEvent(stripeId)).map(({ unsigned, delivered, error_code }) => ({
        unsigned,
        delivered,
        error_code,
      })),
    ).toEqual([
      { unsigned: true, delivered: true, error_code: null },
      { unsigned: false, delivered: false, error_code: 'invalid_argument' },
    ]);
  });

  it('a genuine signed or token event is still sent with its credentials, and unsigned must be a boolean', async () => {
    const client = await h.connect();
    const { id, status } = await deliverGithub(h.origin, '{"action":"edited"}', { event: 'issues' });
    expect(status).toBe(200);
    expect(await callOk<EventDetail>(client, 'get_webhook_event', { id })).toMatchObject({ passed_check: true });
    await callOk(client, 'replay_webhook_event', { id, target_url: consumer.url(), unsigned: false });
    expect(consumer.requests.at(-1)?.headers['x-hub-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
    const bad = await callError(client, 'replay_webhook_event', { id, target_url: consumer.url(), unsigned: 'yes' });
    expect(bad.code).toBe('invalid_argument');
    const token = await deliverToken(h.origin, '{"type":"deploy"}', 'application/json');
    expect(await callOk<EventDetail>(client, 'get_webhook_event', { id: token.id })).toMatchObject({
      trust_mode: 'token',
      verified: false,
      passed_check: true,
    });
    await callOk(client, 'replay_webhook_event', { id: token.id, target_url: consumer.url() });
    expect(consumer.requests.at(-1)?.headers['x-webhook-token']).toBe(HOOK_TOKEN);
  });
});

describe('what replay signed', () => {
  it('Replay says what proves it: resigned with the header names set, never their values; unsigned when asked for, for a forgery, or for an open event', async () => {
    const client = await h.connect();
    const replay = (args: Record<string, unknown>): Promise<ReplayResult> =>
      callOk<ReplayResult>(client, 'replay_webhook_event', { target_url: consumer.url(), ...args });

    const genuine = await deliverGithub(h.origin, '{"action":"labeled"}', { event: 'issues' });
    const resigned = await replay({ id: genuine.id });
    expect(validateReplayWebhookEventOutput(resigned)).toBe(true);
    expectReplaySigned(resigned, consumer.requests.at(-1), { signed: 'resigned', headers: ['x-hub-signature-256'] });
    const token = await deliverToken(h.origin, '{"type":"deploy"}', 'application/json');
    const withToken = await replay({ id: token.id });
    expectReplaySigned(withToken, consumer.requests.at(-1), { signed: 'resigned', headers: ['x-webhook-token'] });
    expect(JSON.stringify(withToken)).not.toContain(HOOK_TOKEN);

    const asked = await replay({ id: genuine.id, unsigned: true });
    expectReplaySigned(asked, consumer.requests.at(-1), { signed: 'unsigned', headers: [] });
    expect(consumer.requests.at(-1)?.headers['x-hub-signature-256']).toBeUndefined();
    const forged = await deliverGithub(h.origin, '{"action":"deleted"}', { event: 'issues', secret: 'not-the-secret' });
    expect(forged.status).toBe(401);
    const forgedId = (await h.store.list({ provider: 'github', limit: 1 })).events[0]?.id ?? '';
    expect(await callOk<EventDetail>(client, 'get_webhook_event', { id: forgedId })).toMatchObject({
      passed_check: false,
    });
    expectReplaySigned(await replay({ id: forgedId, unsigned: true }), consumer.requests.at(-1), {
      signed: 'unsigned',
      headers: [],
    });
    const open = await deliverOpen(h.origin, '{"type":"ping"}');
    expectReplaySigned(await replay({ id: open.id }), consumer.requests.at(-1), { signed: 'unsigned', headers: [] });
  });
});

describe('what the replay result calls each credential', () => {
  it("maps a fresh signature or token to resigned, an asymmetric scheme's original headers to original, and nothing to unsigned", () => {
    expect(replaySigned('signature')).toBe('resigned');
    expect(replaySigned('token')).toBe('resigned');
    expect(replaySigned('original')).toBe('original');
    expect(replaySigned('none')).toBe('unsigned');
    expect(replaySigned(undefined)).toBe('unsigned');
  });
});

describe('replay rate limit', () => {
  it('Exhausted bucket returns rate_limited with retry_after and makes no outbound request', async () => {
    // Its own switchboard: the bucket of the suite above is shared by the "agent" token.
    const own = await startMcpHarness({
      config: { rate_limits: { replay: { capacity: 2, refill_per_second: 0.01 } } },
    });
    try {
      const client = await own.connect();
      const { id } = await deliverOpen(own.origin, '{"type":"ping"}');
      const requestsBefore = consumer.requests.length;
      await callOk(client, 'replay_webhook_event', { id, target_url: consumer.url() });
      await callOk(client, 'replay_webhook_event', { id, target_url: consumer.url() });
      const connectionsBefore = consumer.connections;
      const limited = await callError(client, 'replay_webhook_event', { id, target_url: consumer.url() });
      expect(limited.code).toBe('rate_limited');
      expect(Number.isInteger(limited.retry_after)).toBe(true);
      expect(limited.retry_after).toBeGreaterThanOrEqual(1);
      expect(limited.retry_after).toBeLessThanOrEqual(100);
      expect(consumer.requests.length - requestsBefore).toBe(2);
      expect(consumer.connections).toBe(connectionsBefore);
      // Reads have their own, larger bucket: a caller out of replays can still look.
      await callOk(client, 'list_webhook_events', { limit: 1 });
    } finally {
      await own.close();
    }
  });
});

describe('loop guard on a running switchboard', () => {
  it('refuses a replay into a custom provider route or through 0.0.0.0 and ::, and nothing is ingested again', async () => {
    const looped = await startMcpHarness({
      config: {
        providers: { ...STANDARD_PROVIDERS, incoming: { trust_mode: 'open', route: '/incoming/open' } },
        // Both "this host" addresses may be allowed: the loop guard must still see switchboard behind them.
        replay: { allow: ['0.0.0.0/32', '::/128'], timeout_ms: 2_000 },
      },
    });
    try {
      const client = await looped.connect();
      const delivered = await postJson(`${looped.origin}/incoming/open`, '{"type":"loop"}');
      expect(delivered.status).toBe(200);
      const { id } = (await delivered.json()) as { id: string };
      const stored = async (): Promise<number> =>
        (await callOk<{ events: unknown[] }>(client, 'list_webhook_events', { limit: 100 })).events.length;
      expect(await stored()).toBe(1);

      for (const target of [
        `http://127.0.0.1:${looped.port}/incoming/open`,
        `http://127.0.0.1:${looped.port}/Incoming/Open/`,
        `http://localhost:${looped.port}/incoming/%6fpen`,
        `http://0.0.0.0:${looped.port}/hooks/open`,
        `http://0.0.0.0:${looped.port}/incoming/open`,
        `http://[::]:${looped.port}/hooks/open`,
      ]) {
        const error = await callError(client, 'replay_webhook_event', { id, target_url: target });
        expect(error.code, target).toBe('invalid_argument');
        expect(error.message, target).toMatch(/loop back into switchboard/);
      }
      expect(await stored()).toBe(1);
    } finally {
      await looped.close();
    }
  });
});
