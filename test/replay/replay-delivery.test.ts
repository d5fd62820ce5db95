import { createHmac, randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { validateReplayResult } from '../../generated/validators.js';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import { NEVER_SENT } from '../outbound/never-sent.ts';
import { expectAppError, useReplaySuite, storeDelivery, type ReplayHarness } from './replay-test-kit.ts';
import { closedPort, startConsumer, type Consumer } from '../support/local-server.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

/*
 * What goes on the wire and what comes back, against real HTTP servers on loopback and a real
 * database. Signature checks by the providers' own libraries are in replay-signing.test.ts.
 */

const SECRET = 'gh-secret-for-delivery-tests';
const providers = providersFrom({
  github: { preset: 'github', secret: SECRET },
  hooks: { trust_mode: 'open' },
  sensors: { family: 'queue', channel: 'sensors' },
});

let kit: ReplayHarness;
let consumer: Consumer;
useReplaySuite(providers, (suite) => ({ kit, consumer } = suite));

afterEach(() => {
  consumer.requests.length = 0;
  consumer.handle((_req, res) => res.end('ok'));
});

/** A GitHub delivery as it arrived, with the noise a proxy and a careless sender add. */
function githubDelivery(body: Buffer): string[] {
  return [
    'Host',
    'switchboard.example:8080',
    'User-Agent',
    'GitHub-Hookshot/1a2b3c4',
    'Content-Type',
    'application/json',
    'Content-Length',
    '9999',
    'Accept',
    '*/*',
    'X-GitHub-Event',
    'issues',
    'X-GitHub-Delivery',
    '72d3162e-cc78-11e3-81ab-4c9367dc0958',
    'X-GitHub-Hook-ID',
    '292430182',
    'X-GitHub-Hook-Installation-Target-ID',
    '79929171',
    'X-GitHub-Hook-Installation-Target-Type',
    'repository',
    'X-Hub-Signature',
    `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}`,
    'X-Hub-Signature-256',
    `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
    'Authorization',
    'Bearer sender-credential',
    'Cookie',
    'session=abc',
    'Proxy-Authorization',
    'Basic cHJveHk6cHJveHk=',
    'X-Forwarded-For',
    '198.51.100.1',
    'X-Forwarded-Proto',
    'https',
    'Forwarded',
    'for=198.51.100.1',
    'X-Real-IP',
    '198.51.100.1',
    'X-Internal-Api-Key',
    'internal-secret-value',
    'X-Switchboard-Replay',
    'forged-marker',
    'Connection',
    'keep-alive, X-Hop',
    'X-Hop',
    'hop-value',
    'Keep-Alive',
    'timeout=5',
  ];
}

describe('what is sent', () => {
  it('a JSON body arrives byte-identical, with arbitrary whitespace and key order kept', async () => {
    const body = Buffer.from('{ "zeta" :1,\n\t"action":"opened",  "emoji":"\u{1F680}", "n": 1.50 }\n', 'utf8');
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'github'), {
      rawHeaders: githubDelivery(body),
      body,
    });
    const result = await kit.service().replay({ eventId: event.id, targetUrl: consumer.url('/gh'), caller: 'agent' });

    expect(result).toEqual({
      id: event.id,
      target_url: consumer.url('/gh'),
      delivered: true,
      response_status: 200,
      response_ms: expect.any(Number),
      signed: 'resigned',
      signature_headers: ['x-hub-signature-256'],
      response_excerpt: 'ok',
    });
    expect(validateReplayResult(result)).toBe(true);
    const [received] = consumer.requests;
    expect(received?.method).toBe('POST');
    expect(received?.url).toBe('/gh');
    expect(received?.body.equals(body)).toBe(true);
    expect(received?.headers['content-type']).toBe('application/json');
    expect(received?.headers['content-length']).toBe(String(body.length));
  });

  it('a binary body (invalid UTF-8, NUL bytes) arrives byte-identical with its stored content type', async () => {
    const body = Buffer.concat([
      Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0x80]),
      randomBytes(4096),
      Buffer.from([0]),
    ]);
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'hooks'), {
      rawHeaders: ['Content-Type', 'application/octet-stream', 'X-Event-Type', 'blob.uploaded'],
      body,
    });
    expect(event.payload.equals(body)).toBe(true);
    const result = await kit.service().replay({ eventId: event.id, targetUrl: consumer.url('/bin'), caller: 'agent' });
    expect(result.delivered).toBe(true);
    const [received] = consumer.requests;
    expect(received?.body.equals(body)).toBe(true);
    expect(received?.headers['content-type']).toBe('application/octet-stream');
    expect(received?.headers['x-event-type']).toBe('blob.uploaded');
  });

  it('an empty body and a missing content type are sent as such', async () => {
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'hooks'), {
      rawHeaders: [],
      body: Buffer.alloc(0),
    });
    await kit.service().replay({ eventId: event.id, targetUrl: consumer.url(), caller: 'agent' });
    const [received] = consumer.requests;
    expect(received?.body.length).toBe(0);
    expect(received?.headers['content-type']).toBeUndefined();
    expect(received?.headers['content-length']).toBe('0');
  });

  it('sends the provider event headers, the marker and the sender user agent, and none of the forbidden ones', async () => {
    const body = Buffer.from('{"action":"opened"}');
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'github'), {
      rawHeaders: githubDelivery(body),
      body,
    });
    // Stored as ingest stores it: the signatures and credentials are redacted (an API key under
    // any name that ends so, 37.3), the rest kept.
    expect(event.headers['x-hub-signature-256']).toBe('[redacted]');
    expect(event.headers['authorization']).toBe('[redacted]');
    expect(event.headers['x-internal-api-key']).toBe('[redacted]');

    await kit.service().replay({ eventId: event.id, targetUrl: consumer.url(), caller: 'agent' });
    const [received] = consumer.requests;
    if (!received) throw new Error('nothing arrived');
    const names = Object.keys(received.headers).sort();
    expect(names).toEqual(
      [
        'content-length',
        'content-type',
        'host',
        'user-agent',
        'x-github-delivery',
        'x-github-event',
        'x-github-hook-id',
        'x-github-hook-installation-target-id',
        'x-github-hook-installation-target-type',
        'x-hub-signature-256',
        EVENT_ID_HEADER,
        // undici's own connection header (keep-alive) is the only one not chosen by replay.
        ...(received.headers.connection === undefined ? [] : ['connection']),
      ].sort(),
    );
    expect(received.headers[EVENT_ID_HEADER]).toBe(event.id);
    expect(received.headers.host).toBe(`127.0.0.1:${consumer.port}`);
    expect(received.headers['user-agent']).toBe('GitHub-Hookshot/1a2b3c4');
    expect(received.headers['x-github-event']).toBe('issues');
    expect(received.headers['x-github-delivery']).toBe('72d3162e-cc78-11e3-81ab-4c9367dc0958');
    for (const name of [
      ...NEVER_SENT.filter((n) => n !== 'connection'),
      'x-internal-api-key',
      'x-hop',
      'x-hub-signature',
      'accept',
    ]) {
      expect(received.headers[name], name).toBeUndefined();
    }
    // undici's own connection management, not the stored "keep-alive, X-Hop".
    expect([undefined, 'keep-alive']).toContain(received.headers.connection);
    expect(received.rawHeaders.filter((_v, i) => i % 2 === 1)).not.toContain('[redacted]');
    expect(JSON.stringify(received.rawHeaders)).not.toMatch(
      /sender-credential|session=abc|internal-secret-value|forged-marker/,
    );
  });

  it('a queue event is sent with its bytes, content type and marker only: message fields are data, not headers', async () => {
    const body = Buffer.from('{"temp":21.5}');
    const event = await storeDelivery(
      kit.store,
      providers.find((p) => p.name === 'sensors')!,
      {
        rawHeaders: [
          'content-type',
          'application/json',
          'user-agent',
          'field-value',
          'x-event-type',
          'reading',
          'connection',
          'field',
        ],
        body,
      },
    );
    await kit.service().replay({ eventId: event.id, targetUrl: consumer.url(), caller: 'agent' });
    const [received] = consumer.requests;
    expect(received?.body.equals(body)).toBe(true);
    expect(received?.headers['user-agent']).toBeUndefined();
    expect(received?.headers['x-event-type']).toBeUndefined();
    expect(received?.headers[EVENT_ID_HEADER]).toBe(event.id);
    expect(received?.headers['content-type']).toBe('application/json');
  });

  it('uses replay.default_target when the call names no target', async () => {
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'hooks'), {
      rawHeaders: [],
      body: Buffer.from('{}'),
    });
    const service = kit.service({ replay: { defaultTarget: consumer.url('/default'), timeoutMs: 3_000 } });
    const result = await service.replay({ eventId: event.id, targetUrl: undefined, caller: 'agent' });
    expect(result.target_url).toBe(consumer.url('/default'));
    expect(consumer.requests.map((r) => r.url)).toEqual(['/default']);
  });
});

describe('outcomes', () => {
  let eventId: string;
  beforeAll(async () => {
    const event = await storeDelivery(kit.store, webhookProvider(providers, 'hooks'), {
      rawHeaders: [],
      body: Buffer.from('{"k":1}'),
    });
    eventId = event.id;
  });

  it.each([200, 202, 204])('a %i answer is delivered', async (status) => {
    consumer.handle((_req, res) => {
      res.statusCode = status;
      res.end();
    });
    const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({ delivered: true, response_status: status });
    expect(result.response_ms).toBeGreaterThanOrEqual(0);
  });

  it.each([400, 401, 404, 422, 500, 502, 503])('Downstream non-2xx is reported, not raised: %i', async (status) => {
    consumer.handle((_req, res) => {
      res.statusCode = status;
      res.end(JSON.stringify({ error: 'consumer says no' }));
    });
    const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({ id: eventId, delivered: true, response_status: status });
    expect(validateReplayResult(result)).toBe(true);
  });

  it('reports the start of the answer as an excerpt with its content type, in the result and in the history', async () => {
    consumer.handle((_req, res) => {
      res.statusCode = 500;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end('{"error":"TypeError: cannot read properties of undefined (reading \'id\')"}');
    });
    const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({
      response_status: 500,
      response_excerpt: '{"error":"TypeError: cannot read properties of undefined (reading \'id\')"}',
      response_content_type: 'application/json; charset=utf-8',
    });
    expect(validateReplayResult(result)).toBe(true);
    const [latest] = await kit.attempts.listForEvent(eventId);
    expect(latest).toMatchObject({
      response_excerpt: result.response_excerpt,
      response_content_type: 'application/json; charset=utf-8',
    });
  });

  it('cuts a long answer to 2 KiB at a whole UTF-8 character and marks the cut with …', async () => {
    // 2047 ASCII bytes then a 3-byte character: the cut at 2048 bytes falls inside it.
    const text = `${'a'.repeat(2047)}€${'b'.repeat(5000)}`;
    consumer.handle((_req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.end(text);
    });
    const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result.response_excerpt).toBe(`${'a'.repeat(2047)}…`);
    expect(validateReplayResult(result)).toBe(true);
  });

  it('escapes a binary answer (\\xNN, NUL as \\u0000), leaves the excerpt out for an empty one, and the content type out when none was sent', async () => {
    consumer.handle((_req, res) => {
      res.setHeader('content-type', 'application/octet-stream');
      res.end(Buffer.from([0xff, 0xfe, 0x00, 0x80]));
    });
    const binary = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(binary.response_excerpt).toBe('\\xff\\xfe\\u0000\\x80');
    expect(binary.response_content_type).toBe('application/octet-stream');
    consumer.handle((_req, res) => {
      res.statusCode = 204;
      res.removeHeader('content-type');
      res.end();
    });
    const empty = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(empty).not.toHaveProperty('response_excerpt');
    expect(empty).not.toHaveProperty('response_content_type');
    const [latest] = await kit.attempts.listForEvent(eventId);
    expect(latest).not.toHaveProperty('response_excerpt');
  });

  it('Downstream non-2xx is reported, not raised: a 3xx is reported as is and its Location is not followed', async () => {
    const elsewhere = await startConsumer('127.0.0.1');
    try {
      consumer.handle((_req, res) => {
        res.statusCode = 307;
        res.setHeader('location', elsewhere.url('/moved'));
        res.end();
      });
      const result = await kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
      expect(result).toMatchObject({ delivered: true, response_status: 307 });
      expect(elsewhere.connections).toBe(0);
      expect(consumer.requests).toHaveLength(1);
    } finally {
      await elsewhere.close();
    }
  });

  it('Unreachable target is replay_failed: connection refused on a port that was opened and closed', async () => {
    const port = await closedPort();
    const error = await expectAppError(
      kit.service().replay({ eventId, targetUrl: `http://127.0.0.1:${port}/hook?token=query-secret`, caller: 'agent' }),
      'replay_failed',
      /connection refused \(ECONNREFUSED\)/,
    );
    expect(error.message).toContain(`http://127.0.0.1:${port}/hook`);
    expect(error.message).not.toContain('query-secret');
  });

  it('Unreachable target is replay_failed: a target that accepts but never answers times out after replay.timeout_ms', async () => {
    const silent = await startConsumer('127.0.0.1', () => {
      // Never answers.
    });
    try {
      const service = kit.service({ replay: { defaultTarget: undefined, timeoutMs: 300 } });
      const started = Date.now();
      await expectAppError(
        service.replay({ eventId, targetUrl: silent.url(), caller: 'agent' }),
        'replay_failed',
        /no answer within 300 ms/,
      );
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(250);
      expect(elapsed).toBeLessThan(2_500);
      expect(silent.requests).toHaveLength(1);
    } finally {
      await silent.close();
    }
  });

  it('Unreachable target is replay_failed: a connection reset before the answer', async () => {
    consumer.handle((_req, res) => {
      res.socket?.resetAndDestroy();
    });
    await expectAppError(
      kit.service().replay({ eventId, targetUrl: consumer.url(), caller: 'agent' }),
      'replay_failed',
      /failed:/,
    );
  });

  it('an endless response body is read only up to the bound, so the outcome comes back at once', async () => {
    let stopped = false;
    consumer.handle((_req, res) => {
      res.statusCode = 200;
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = (): void => {
        while (!stopped && !res.destroyed && res.write(chunk)) {
          // keep the socket buffer full
        }
        if (!stopped && !res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => {
        stopped = true;
      });
      pump();
    });
    const service = kit.service({ replay: { defaultTarget: undefined, timeoutMs: 10_000 } });
    const started = Date.now();
    const result = await service.replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({ delivered: true, response_status: 200 });
    expect(Date.now() - started).toBeLessThan(3_000);
    await expect.poll(() => stopped, { timeout: 2_000 }).toBe(true);
  });

  it('Unknown id raises not_found on replay, before any outbound request', async () => {
    const connectionsBefore = consumer.connections;
    await expectAppError(
      kit.service().replay({ eventId: uuidv7(), targetUrl: consumer.url(), caller: 'agent' }),
      'not_found',
    );
    expect(consumer.connections).toBe(connectionsBefore);
  });

  it('a malformed event id is invalid_argument, before any outbound request', async () => {
    const connectionsBefore = consumer.connections;
    await expectAppError(
      kit.service().replay({ eventId: 'not-a-uuid', targetUrl: consumer.url(), caller: 'agent' }),
      'invalid_argument',
    );
    expect(consumer.connections).toBe(connectionsBefore);
  });
});
