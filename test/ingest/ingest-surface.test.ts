import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { acceptedId, post, startHarness, type Harness } from './ingest-harness.ts';
import { chunked, trickle } from '../support/raw-socket.ts';
import { fetchInChild } from '../support/fetch-in-child.ts';

const GITHUB_SECRET = 'github-secret-for-surface-tests';
const SLACK_SECRET = 'slack-signing-secret-for-tests';
const SHOPIFY_SECRET = 'shopify-secret-for-tests';
const TOKEN = 'shared-token-value-1234567890';
const LIMIT = 4096;

let harness: Harness;

// A real (silent) pino logger that counts the per-request child loggers made from it.
const logger = createLogger({ level: 'silent' });
let childLoggers = 0;
const makeChild = logger.child.bind(logger);
logger.child = ((...args: Parameters<typeof makeChild>) => {
  childLoggers += 1;
  return makeChild(...args);
}) as typeof logger.child;

beforeAll(async () => {
  harness = await startHarness({
    logger,
    providers: {
      github: { preset: 'github', secret: GITHUB_SECRET, max_body_bytes: LIMIT },
      slack: { preset: 'slack', secret: SLACK_SECRET },
      shopify: { preset: 'shopify', secret: SHOPIFY_SECRET },
      tokenized: { trust_mode: 'token', token: TOKEN, token_header: 'X-Relay-Token' },
      gitlab: { preset: 'gitlab', token: TOKEN },
      open: { trust_mode: 'open', route: '/custom/open-hook' },
      nosecret: { preset: 'github' },
      quiet: { preset: 'github', secret: GITHUB_SECRET, record_rejected: false },
      disabled: { preset: 'github', secret: GITHUB_SECRET, enabled: false },
    },
  });
});

afterAll(async () => {
  await harness?.close();
});

/** Posts a delivery that must be accepted, and answers the row it was stored as. */
async function postStored(path: string, body: Buffer | string, headers: Record<string, string>) {
  const res = await post(`${harness.url}${path}`, body, headers);
  expect(res.status, res.text).toBe(200);
  return harness.store.get(acceptedId(res));
}

const port = (): number => (harness.server.address() as AddressInfo).port;

async function githubDelivery(body: string, headers: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': await octokitSign(GITHUB_SECRET, body),
    ...headers,
  };
}

function slackHeaders(body: Buffer, secret = SLACK_SECRET): Record<string, string> {
  const ts = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', secret).update(`v0:${ts}:`).update(body).digest('hex');
  return { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${signature}` };
}

function shopifyHeaders(body: Buffer): Record<string, string> {
  return {
    'x-shopify-topic': 'orders/create',
    'x-shopify-webhook-id': randomUUID(),
    'x-shopify-hmac-sha256': createHmac('sha256', SHOPIFY_SECRET).update(body).digest('base64'),
  };
}

describe('raw bytes', () => {
  it('stores a form-encoded body byte for byte, with its content type', async () => {
    const body = Buffer.from('payload=%7B%22type%22%3A%22block_actions%22%7D&x=%C3%A9+%20&empty=');
    const stored = await postStored('/hooks/slack', body, {
      ...slackHeaders(body),
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(stored?.payload.equals(body)).toBe(true);
    expect(stored).toMatchObject({
      contentType: 'application/x-www-form-urlencoded',
      verified: true,
      eventType: 'block_actions',
    });
  });

  it('stores a binary (non-UTF-8) body byte for byte and verifies its signature', async () => {
    const body = Buffer.from([
      0x00, 0xff, 0xfe, 0x80, 0xc0, 0xaf, 0x7b, 0x22, 0xed, 0xa0, 0x80, 0x0a, 0x0d, 0x01, 0x00,
    ]);
    const stored = await postStored('/hooks/shopify', body, {
      ...shopifyHeaders(body),
      'content-type': 'application/octet-stream',
    });
    expect(stored?.payload.equals(body)).toBe(true);
    expect(stored?.verified).toBe(true);
  });

  it('stores JSON with odd whitespace and key order exactly as sent (never re-serialised)', async () => {
    const text = '{ "zeta":1,\n\t"action" : "opened",  "unicode":"\\u00e9\u00e9", "big": 12345678901234567890 }\r\n';
    const stored = await postStored('/hooks/github', text, await githubDelivery(text));
    expect(stored?.payload.equals(Buffer.from(text))).toBe(true);
  });
});

describe('header sanitizing over HTTP', () => {
  it('keeps no secret, token or signature value anywhere in the stored row', async () => {
    const text = JSON.stringify({ action: 'opened', issue: { number: 1 } });
    const signature256 = await octokitSign(GITHUB_SECRET, text);
    const signature1 = `sha1=${createHmac('sha1', GITHUB_SECRET).update(text).digest('hex')}`;
    const res = await post(`${harness.url}/hooks/github`, text, {
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signature256,
      'x-hub-signature': signature1,
      authorization: 'Basic dXNlcjpodW50ZXIy',
      cookie: 'session=very-secret-cookie-value',
    });
    expect(res.status).toBe(200);
    const tokenRes = await post(`${harness.url}/hooks/tokenized`, '{"type":"x"}', {
      'x-relay-token': TOKEN,
      authorization: `Bearer ${TOKEN}`,
    });
    expect(tokenRes.status).toBe(200);
    const gitlabRes = await post(`${harness.url}/hooks/gitlab`, '{"object_kind":"push"}', { 'x-gitlab-token': TOKEN });
    expect(gitlabRes.status).toBe(200);

    const stored = await harness.store.get(acceptedId(res));
    expect(stored?.headers).toMatchObject({
      'x-hub-signature-256': '[redacted]',
      'x-hub-signature': '[redacted]',
      authorization: '[redacted]',
      cookie: '[redacted]',
      'x-github-event': 'issues',
    });
    const tokenStored = await harness.store.get(acceptedId(tokenRes));
    expect(tokenStored?.headers).toMatchObject({ 'x-relay-token': '[redacted]', authorization: '[redacted]' });
    expect(tokenStored).toMatchObject({ trustMode: 'token', verified: false });

    const everything = (await harness.rawRows()).join('\n');
    for (const secret of [
      GITHUB_SECRET,
      TOKEN,
      signature256,
      signature256.slice('sha256='.length),
      signature1.slice('sha1='.length),
      'dXNlcjpodW50ZXIy',
      'very-secret-cookie-value',
    ]) {
      expect(everything).not.toContain(secret);
    }
  });

  it('stores repeated headers as a list in arrival order and drops hop-by-hop ones', async () => {
    const text = '{"action":"opened"}';
    const headers = await githubDelivery(text);
    const sent = Buffer.from(text);
    let done = false;
    const status = await trickle(port(), {
      head: [
        'POST /hooks/github HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        'X-Multi: first',
        `X-GitHub-Event: ${headers['x-github-event'] ?? ''}`,
        'X-Multi: second',
        `X-GitHub-Delivery: ${headers['x-github-delivery'] ?? ''}`,
        `X-Hub-Signature-256: ${headers['x-hub-signature-256'] ?? ''}`,
        'Connection: keep-alive, X-Hop',
        'X-Hop: per-hop',
        'X-Multi: third',
        `Content-Length: ${sent.length}`,
      ],
      nextChunk: () => {
        if (done) return null;
        done = true;
        return sent;
      },
    });
    expect(status.status).toBe(200);
    const stored = await harness.store.get((JSON.parse(status.body.toString()) as { id: string }).id);
    expect(stored?.headers['x-multi']).toEqual(['first', 'second', 'third']);
    expect(stored?.headers).not.toHaveProperty('connection');
    expect(stored?.headers).not.toHaveProperty('x-hop');
    expect(stored?.headers['content-type']).toBe('application/json');
  });
});

describe('duplicates', () => {
  it('stores a retried delivery once and acknowledges both with the stored id', async () => {
    const text = JSON.stringify({ action: 'opened', n: randomUUID() });
    const headers = await githubDelivery(text);
    const first = await post(`${harness.url}/hooks/github`, text, headers);
    const second = await post(`${harness.url}/hooks/github`, text, headers);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.json).toEqual({ id: acceptedId(first), duplicate: false });
    expect(second.json).toEqual({ id: acceptedId(first), duplicate: true });
    const rows = (await harness.rows('github')).filter((r) => r.externalId === headers['x-github-delivery']);
    expect(rows).toHaveLength(1);
  });

  it('stores concurrent copies of one delivery once, all acknowledged with the same id', async () => {
    const text = JSON.stringify({ action: 'opened', n: randomUUID() });
    const headers = await githubDelivery(text);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => post(`${harness.url}/hooks/github`, text, headers)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(new Set(answers.map(acceptedId)).size).toBe(1);
    expect(answers.filter((a) => (a.json as { duplicate: boolean }).duplicate === false)).toHaveLength(1);
    const rows = (await harness.rows('github')).filter((r) => r.externalId === headers['x-github-delivery']);
    expect(rows).toHaveLength(1);
  });

  it('does not let a rejected delivery claim the external id of the genuine one that follows', async () => {
    const text = JSON.stringify({ action: 'opened', n: randomUUID() });
    const delivery = randomUUID();
    const forged = await post(`${harness.url}/hooks/github`, text, {
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'x-hub-signature-256': await octokitSign('not-the-secret', text),
    });
    expect(forged.status).toBe(401);
    const genuine = await post(
      `${harness.url}/hooks/github`,
      text,
      await githubDelivery(text, { 'x-github-delivery': delivery }),
    );
    expect(genuine.json).toMatchObject({ duplicate: false });
    expect(await harness.store.get(acceptedId(genuine))).toMatchObject({ verified: true, externalId: delivery });
  });
});

describe('body size limit', () => {
  const countRows = async (): Promise<number> => (await harness.rows('github')).length;

  it('answers 413 to a declared Content-Length over the limit without reading the body', async () => {
    const before = await countRows();
    const text = 'x'.repeat(LIMIT + 1);
    const signed = await githubDelivery(text);
    const res = await trickle(port(), {
      head: [
        'POST /hooks/github HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        `Content-Length: ${10 * 1024 * 1024}`,
        ...Object.entries(signed).map(([k, v]) => `${k}: ${v}`),
      ],
      // Nothing of the body is ever sent: the answer must come from the header alone.
      nextChunk: () => null,
    });
    expect(res.status).toBe(413);
    expect(res.sentBeforeAnswer).toBe(0);
    expect(res.headers['connection']).toBe('close');
    expect(JSON.parse(res.body.toString())).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(await countRows()).toBe(before);
  });

  it("lets Node's fetch read the 413 for a 6 MiB POST over the default 5 MiB limit (26.15)", async () => {
    // fetch runs in its own process, as a sender's would: in this one it shares the event loop
    // with the server and wins the race a real client loses. Without a lingering close the socket
    // is gone while fetch is still sending, and it reports EPIPE or a reset instead of the answer.
    const before = (await harness.rows('open')).length;
    const statuses = await fetchInChild(`${harness.url}/custom/open-hook`, 6 * 1024 * 1024, 6);
    expect(statuses).toEqual(Array(6).fill('413 payload_too_large'));
    expect(await harness.rows('open')).toHaveLength(before);
  });

  it('answers 413 to a chunked body once it passes the limit, while the client is still sending', async () => {
    const before = await countRows();
    const signed = await githubDelivery('irrelevant');
    const piece = Buffer.alloc(1024, 0x61);
    const res = await trickle(port(), {
      head: [
        'POST /hooks/github HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        ...Object.entries(signed).map(([k, v]) => `${k}: ${v}`),
      ],
      // An endless body: only stopping at the limit can produce an answer.
      nextChunk: () => chunked(piece),
      intervalMs: 5,
    });
    expect(res.status).toBe(413);
    expect(res.sentBeforeAnswer).toBeGreaterThan(LIMIT);
    expect(res.sentBeforeAnswer).toBeLessThan(LIMIT * 64);
    expect(await countRows()).toBe(before);
  });

  it('stores nothing when the client goes away mid-body, and keeps serving', async () => {
    const before = await countRows();
    const text = JSON.stringify({ action: 'opened', n: randomUUID() });
    const signed = await githubDelivery(text);
    const socket = connect(port(), '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      [
        'POST /hooks/github HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(text)}`,
        ...Object.entries(signed).map(([k, v]) => `${k}: ${v}`),
        '',
        text.slice(0, 10),
      ].join('\r\n'),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await countRows()).toBe(before);
    const next = await post(`${harness.url}/hooks/github`, text, await githubDelivery(text));
    expect(next.status).toBe(200);
  });

  it('accepts a body of exactly the limit', async () => {
    const text = JSON.stringify({ action: 'opened', pad: '' });
    const padded = text.replace('"pad":""', `"pad":"${'p'.repeat(LIMIT - text.length)}"`);
    expect(Buffer.byteLength(padded)).toBe(LIMIT);
    const res = await post(`${harness.url}/hooks/github`, padded, await githubDelivery(padded));
    expect(res.status).toBe(200);
  });

  it('checks the method before the size, and the size before the headers', async () => {
    const get = await trickle(port(), {
      head: ['GET /hooks/github HTTP/1.1', 'Host: 127.0.0.1', `Content-Length: ${LIMIT * 10}`],
      nextChunk: () => null,
    });
    expect(get.status).toBe(405);
    const unsigned = await trickle(port(), {
      head: ['POST /hooks/github HTTP/1.1', 'Host: 127.0.0.1', `Content-Length: ${LIMIT * 10}`],
      nextChunk: () => null,
    });
    expect(unsigned.status).toBe(413);
  });
});

describe('routes and methods', () => {
  it('answers 404 for an unknown provider and a disabled one, storing nothing', async () => {
    const before = (await harness.rows()).length;
    const text = '{"action":"opened"}';
    const unknown = await post(`${harness.url}/hooks/nope`, text, await githubDelivery(text));
    const disabled = await post(`${harness.url}/hooks/disabled`, text, await githubDelivery(text));
    expect(unknown.status).toBe(404);
    expect(disabled.status).toBe(404);
    expect(unknown.json).toMatchObject({ error: { code: 'not_found' } });
    // A disabled provider is indistinguishable from an unknown one (both name who the signed
    // delivery looks like, from its headers alone: test/ingest/sender-hint.test.ts).
    const message = (res: typeof unknown): string => (res.json as { error: { message: string } }).error.message;
    expect(message(disabled)).toMatch(/^no webhook provider at \/hooks\/disabled; looks like a delivery from GitHub/);
    expect(message(disabled)).toBe(message(unknown).replaceAll('nope', 'disabled'));
    expect((await harness.rows()).length).toBe(before);
  });

  it('answers 405 with Allow: POST for other methods', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${harness.url}/hooks/github`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toMatchObject({ error: { code: 'method_not_allowed' } });
    }
  });

  it('serves a custom route, and leaves other paths to the rest of the app', async () => {
    const res = await post(`${harness.url}/custom/open-hook`, '{"type":"deploy.done"}');
    expect(res.status).toBe(200);
    expect(await harness.store.get(acceptedId(res))).toMatchObject({
      provider: 'open',
      trustMode: 'open',
      verified: false,
      verifyDetail: 'no verification: open provider',
      eventType: 'deploy.done',
    });
    expect((await fetch(`${harness.url}/hooks/open`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${harness.url}/healthz`)).status).toBe(200);
  });

  it('builds a request logger only for a delivery it has something to log about', async () => {
    // Pino children cost microseconds each, and an accepted webhook logs nothing at info.
    const body = '{"action":"opened"}';
    childLoggers = 0;
    expect((await post(`${harness.url}/hooks/github`, body, await githubDelivery(body))).status).toBe(200);
    expect(childLoggers).toBe(0);
    expect((await post(`${harness.url}/hooks/github`, body, { 'x-github-event': 'issues' })).status).toBe(400);
    expect(childLoggers).toBe(1);
  });

  it("stores an open provider's credential headers redacted (26.14)", async () => {
    const stored = await postStored('/custom/open-hook', '{"type":"x"}', {
      authorization: `Bearer ${TOKEN}`,
      'x-gitlab-token': TOKEN,
      'x-hub-signature-256': `sha256=${TOKEN}`,
      cookie: `session=${TOKEN}`,
      'x-custom': 'kept',
    });
    expect(stored?.headers).toMatchObject({
      authorization: '[redacted]',
      'x-gitlab-token': '[redacted]',
      'x-hub-signature-256': '[redacted]',
      cookie: '[redacted]',
      'x-custom': 'kept',
    });
    expect(JSON.stringify(stored?.headers)).not.toContain(TOKEN);
  });

  it('records the socket address as source_ip', async () => {
    const res = await post(`${harness.url}/custom/open-hook`, '{}', { 'x-forwarded-for': '203.0.113.9' });
    expect((await harness.store.get(acceptedId(res)))?.sourceIp).toBe('127.0.0.1');
  });
});

describe('token, open and secretless providers', () => {
  it('accepts the right token (header or Bearer) as trust_mode token, never verified', async () => {
    const viaHeader = await post(`${harness.url}/hooks/tokenized`, '{"type":"a"}', { 'x-relay-token': TOKEN });
    const viaBearer = await post(`${harness.url}/hooks/tokenized`, '{"type":"b"}', {
      authorization: `Bearer ${TOKEN}`,
    });
    expect([viaHeader.status, viaBearer.status]).toEqual([200, 200]);
    expect(await harness.store.get(acceptedId(viaBearer))).toMatchObject({
      trustMode: 'token',
      verified: false,
      eventType: 'b',
    });
  });

  it('rejects a wrong token with 401 and records it; a missing one with 400', async () => {
    const wrong = await post(`${harness.url}/hooks/tokenized`, '{"type":"wrong"}', { 'x-relay-token': 'nope' });
    expect(wrong.status).toBe(401);
    const recorded = (await harness.rows('tokenized')).findLast((r) => r.eventType === 'wrong');
    expect(recorded?.verifyDetail).toMatch(/token mismatch/);
    const missing = await post(`${harness.url}/hooks/tokenized`, '{"type":"missing"}');
    expect(missing.status).toBe(400);
    expect((missing.json as { error: { message: string } }).error.message).toContain('x-relay-token');
  });

  it('rejects deliveries to a signed provider with no secret (401) and records why', async () => {
    const text = JSON.stringify({ action: 'opened', n: randomUUID() });
    const res = await post(`${harness.url}/hooks/nosecret`, text, await githubDelivery(text));
    expect(res.status).toBe(401);
    const recorded = (await harness.rows('nosecret')).at(-1);
    expect(recorded).toMatchObject({ verified: false });
    expect(recorded?.verifyDetail).toMatch(/^no secret configured/);
  });

  it('does not record rejected deliveries when record_rejected is false', async () => {
    const text = JSON.stringify({ action: 'opened' });
    const res = await post(`${harness.url}/hooks/quiet`, text, {
      'x-github-event': 'issues',
      'x-hub-signature-256': await octokitSign('wrong', text),
    });
    expect(res.status).toBe(401);
    expect(await harness.rows('quiet')).toHaveLength(0);
  });
});

describe('slack url_verification', () => {
  const handshake = (): Buffer =>
    Buffer.from(
      JSON.stringify({
        token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
        challenge: `3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P-${randomUUID()}`,
        type: 'url_verification',
      }),
    );

  it('answers a signed handshake with the challenge and stores it as a url_verification event', async () => {
    const body = handshake();
    const before = (await harness.rows('slack')).length;
    const res = await post(`${harness.url}/hooks/slack`, body, slackHeaders(body));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ challenge: (JSON.parse(body.toString()) as { challenge: string }).challenge });
    const rows = await harness.rows('slack');
    expect(rows).toHaveLength(before + 1);
    expect(rows.at(-1)).toMatchObject({ eventType: 'url_verification', verified: true });
  });

  it('refuses a handshake with a bad signature instead of echoing the challenge', async () => {
    const body = handshake();
    const res = await post(`${harness.url}/hooks/slack`, body, slackHeaders(body, 'wrong-secret'));
    expect(res.status).toBe(401);
    expect(res.text).not.toContain('3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
  });
});

describe('group commit', () => {
  it('answers each of many concurrent deliveries only after its row is committed', async () => {
    const count = 150;
    const seenMissing: string[] = [];
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const text = JSON.stringify({ action: 'opened', i });
        const res = await post(`${harness.url}/hooks/github`, text, await githubDelivery(text));
        expect(res.status).toBe(200);
        // Looked up on another connection the moment the 200 arrives: it must already be visible.
        const id = acceptedId(res);
        if ((await harness.store.get(id)) === null) seenMissing.push(id);
      }),
    );
    expect(seenMissing).toEqual([]);
  });

  it('announces committed events on the bus', async () => {
    const heard: string[] = [];
    const unsubscribe = harness.bus.subscribe((ids) => heard.push(...ids));
    try {
      const text = JSON.stringify({ action: 'opened', n: randomUUID() });
      const res = await post(`${harness.url}/hooks/github`, text, await githubDelivery(text));
      const id = acceptedId(res);
      await expect.poll(() => heard.includes(id), { timeout: 5_000 }).toBe(true);
    } finally {
      unsubscribe();
    }
  });
});
