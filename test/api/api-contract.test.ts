/**
 * The documents against reality: real responses of every /api endpoint are validated against
 * the OpenAPI components (Ajv2020 + ajv-formats), and real stream messages against the AsyncAPI
 * payload schemas.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMAS } from '../../generated/schemas.ts';
import { CI_TOKEN, startApiTestServer, type ApiTestServer } from './api-test-server.ts';
import { answerWith, startConsumer, type Consumer } from '../support/local-server.ts';
import { eventually } from '../forward/forward-kit.ts';
import {
  call,
  openStream,
  sendBadlySignedGithub,
  sendOpen,
  sendSignedGithub,
  sendToken,
  type RawResponse,
} from './http-helpers.ts';

type Json = Record<string, unknown>;

const root = join(import.meta.dirname, '../..');
const openapi = JSON.parse(readFileSync(join(root, 'docs/reference/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Json }> }> }>>;
  components: { schemas: Record<string, Json> };
};
const asyncapi = parseYaml(readFileSync(join(root, 'docs/reference/asyncapi.yaml'), 'utf8')) as {
  asyncapi: string;
  channels: Record<string, { address: string; messages: Record<string, Json> }>;
  components: { schemas: Record<string, Json>; messages: Record<string, { payload: { $ref: string } }> };
};

// ajv-formats ships CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: true }));
const COMPONENT_ID = 'https://switchboard.dev/openapi/components/';
for (const [name, schema] of Object.entries(openapi.components.schemas)) {
  ajv.addSchema(
    JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', COMPONENT_ID)) as Json,
    `${COMPONENT_ID}${name}`,
  );
}

/** The validator OpenAPI documents for this operation and status; fails the test when it documents none. */
function documented(path: string, method: string, status: number): ValidateFunction | 'non-json' {
  const operation = openapi.paths[path]?.[method.toLowerCase()];
  const response = operation?.responses[String(status)];
  if (!response)
    throw new Error(`${method} ${path} answered ${status}, which docs/reference/openapi.json does not document`);
  const json = response.content?.['application/json'];
  if (!json) return 'non-json';
  const schema = JSON.parse(JSON.stringify(json.schema).replaceAll('#/components/schemas/', COMPONENT_ID)) as Json;
  return ajv.compile(schema);
}

const checked: string[] = [];

function expectDocumented(path: string, method: string, res: RawResponse): void {
  const validate = documented(path, method, res.status);
  checked.push(`${method} ${path} ${res.status}`);
  if (validate === 'non-json') return;
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json();
  const ok = validate(body);
  expect(ok, `${method} ${path} ${res.status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`).toBe(true);
}

let server: ApiTestServer;
let consumer: Consumer;
let ids: { github: string; binary: string; token: string; rejected: string };

beforeAll(async () => {
  consumer = await startConsumer('127.0.0.1', answerWith(200));
  server = await startApiTestServer({
    defaultTarget: consumer.url(),
    heartbeatMs: 200,
    // One rule that delivers and one whose consumer is never there, so deliveries of every kind exist.
    extraConfig: [
      'forward:',
      `  local-app: { to: "${consumer.url('/forwarded?key=k')}" }`,
      '  nowhere: { to: "http://127.0.0.1:1/hook", providers: [ci], max_attempts: 1, backoff: { initial_ms: 10, max_ms: 10 } }',
    ],
  });
  ids = {
    github: (await sendSignedGithub(server)).id,
    binary: await sendOpen(server, Buffer.from([0xde, 0xad, 0xbe, 0xef]), 'application/octet-stream'),
    token: await sendToken(server, { type: 'deploy.done' }),
    rejected: await sendBadlySignedGithub(server),
  };
});
afterAll(async () => {
  await server?.close();
  await consumer?.close();
});

const UNKNOWN = '0193f0c4-5a6e-7b8c-9d0e-1f2a3b4c5d6e';

describe('real /api responses match docs/reference/openapi.json', () => {
  it('GET /api/events: pages, searches and errors', async () => {
    const p = '/api/events';
    for (const q of [
      '',
      '?limit=1',
      '?provider=github&verified=false',
      '?q=octocat',
      `?match=${encodeURIComponent('{"ref":"refs/heads/main"}')}`,
      '?from=2020-01-01T00:00:00Z&to=2999-01-01T00:00:00Z',
    ]) {
      expectDocumented(p, 'GET', await call(server, `${p}${q}`));
    }
    expectDocumented(p, 'GET', await call(server, `${p}?limit=500`));
    expectDocumented(p, 'GET', await call(server, p, { token: null }));
    expectDocumented(p, 'GET', await call(server, p, { headers: { host: 'evil.example' } }));
  });

  it('GET /api/events/{id} for every trust mode, and its errors', async () => {
    const p = '/api/events/{id}';
    for (const id of Object.values(ids)) expectDocumented(p, 'GET', await call(server, `/api/events/${id}`));
    expectDocumented(p, 'GET', await call(server, `/api/events/${UNKNOWN}`));
    expectDocumented(p, 'GET', await call(server, '/api/events/nope'));
  });

  it('GET /api/events/{id}/raw', async () => {
    const p = '/api/events/{id}/raw';
    const raw = await call(server, `/api/events/${ids.binary}/raw`);
    expect(raw.bytes.equals(Buffer.from([0xde, 0xad, 0xbe, 0xef]))).toBe(true);
    expectDocumented(p, 'GET', raw);
    expectDocumented(p, 'GET', await call(server, `/api/events/${UNKNOWN}/raw`));
  });

  it('POST /api/events/{id}/replay: delivered, refused, failed, missing', async () => {
    const p = '/api/events/{id}/replay';
    const json = { 'content-type': 'application/json' };
    expectDocumented(p, 'POST', await call(server, `/api/events/${ids.github}/replay`, { method: 'POST' }));
    expectDocumented(
      p,
      'POST',
      await call(server, `/api/events/${ids.token}/replay`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ target_url: consumer.url() }),
      }),
    );
    expectDocumented(
      p,
      'POST',
      await call(server, `/api/events/${ids.github}/replay`, {
        method: 'POST',
        headers: json,
        body: '{"target_url":"gopher://x"}',
      }),
    );
    expectDocumented(
      p,
      'POST',
      await call(server, `/api/events/${ids.github}/replay`, {
        method: 'POST',
        headers: json,
        body: '{"target_url":"http://127.0.0.1:1/"}',
      }),
    );
    expectDocumented(p, 'POST', await call(server, `/api/events/${UNKNOWN}/replay`, { method: 'POST' }));
    expectDocumented(
      p,
      'POST',
      await call(server, `/api/events/${ids.github}/replay`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ target_url: 'x'.repeat(40_000) }),
      }),
    );
  });

  it('GET /api/events/{id}/replay-headers: what a replay copies, never a signature or token', async () => {
    const p = '/api/events/{id}/replay-headers';
    const github = await call(server, `/api/events/${ids.github}/replay-headers`);
    expectDocumented(p, 'GET', github);
    const gh = github.json() as { passed_check: boolean | null; headers: Record<string, string> };
    expect(gh.passed_check).toBe(true);
    expect(gh.headers['x-github-event']).toBe('push');
    expect(gh.headers['x-switchboard-replay']).toBe(ids.github);
    expect(gh.headers['x-hub-signature-256']).toBeUndefined();
    const rejected = await call(server, `/api/events/${ids.rejected}/replay-headers`);
    expectDocumented(p, 'GET', rejected);
    expect((rejected.json() as { passed_check: boolean }).passed_check).toBe(false);
    const token = await call(server, `/api/events/${ids.token}/replay-headers`);
    expectDocumented(p, 'GET', token);
    expect(JSON.stringify(token.json())).not.toContain(CI_TOKEN);
    const open = await call(server, `/api/events/${ids.binary}/replay-headers`);
    expectDocumented(p, 'GET', open);
    expect(open.json()).toMatchObject({ passed_check: null, headers: { 'content-type': 'application/octet-stream' } });
    expectDocumented(p, 'GET', await call(server, `/api/events/${UNKNOWN}/replay-headers`));
  });

  it('GET /api/providers/{name}: status and how it signs, never the secret', async () => {
    const p = '/api/providers/{name}';
    const github = await call(server, '/api/providers/github');
    expectDocumented(p, 'GET', github);
    expect(github.json()).toEqual({
      provider: expect.objectContaining({ name: 'github', preset: 'github' }),
      verifies_with_public_key: false,
    });
    const ci = await call(server, '/api/providers/ci');
    expectDocumented(p, 'GET', ci);
    expect(ci.json()).toMatchObject({ token_header: expect.any(String) });
    expect(JSON.stringify(ci.json())).not.toContain(CI_TOKEN);
    expectDocumented(p, 'GET', await call(server, '/api/providers/nope'));
    expectDocumented(p, 'GET', await call(server, '/api/providers/github', { token: null }));
  });

  it('GET /api/events/{id}/replays', async () => {
    const p = '/api/events/{id}/replays';
    const res = await call(server, `/api/events/${ids.github}/replays`);
    expect((res.json() as { attempts: unknown[] }).attempts.length).toBeGreaterThan(0);
    expectDocumented(p, 'GET', res);
    expectDocumented(p, 'GET', await call(server, `/api/events/${UNKNOWN}/replays`));
  });

  it('GET /api/providers and /api/config', async () => {
    expectDocumented('/api/providers', 'GET', await call(server, '/api/providers'));
    expectDocumented('/api/providers', 'GET', await call(server, '/api/providers', { token: null }));
    expectDocumented('/api/config', 'GET', await call(server, '/api/config'));
    expectDocumented('/api/config', 'GET', await call(server, '/api/config', { token: 'wrong' }));
  });

  it('GET /api/stream errors', async () => {
    expectDocumented('/api/stream', 'GET', await call(server, '/api/stream', { headers: { 'last-event-id': 'x' } }));
    expectDocumented('/api/stream', 'GET', await call(server, '/api/stream', { token: null }));
  });

  it('rate_limited and database-down answers', async () => {
    const limited = await startApiTestServer({ readLimit: { capacity: 1, refillPerSecond: 0.01 }, viaProxy: true });
    try {
      expectDocumented('/api/events', 'GET', await call(limited, '/api/events'));
      expectDocumented('/api/events', 'GET', await call(limited, '/api/events'));
      const other = await limited.createToken('second');
      await limited.takeDatabaseDown();
      const down = await call(limited, `/api/events/${UNKNOWN}`, { token: other });
      expect(down.status).toBe(503);
      expectDocumented('/api/events/{id}', 'GET', down);
    } finally {
      await limited.close();
    }
  });

  it('forwarding: GET /api/forwards, deliveries of an event, retry, retry-dead, pause and resume', async () => {
    const deliveriesOf = async (id: string) =>
      (await call(server, `/api/events/${id}/deliveries`)).json() as {
        deliveries: { id: string; rule: string; state: string }[];
      };
    const dead = await eventually(async () => {
      const found = (await deliveriesOf(ids.token)).deliveries.find((d) => d.rule === 'nowhere');
      return found?.state === 'dead' && found;
    }, 'the nowhere delivery to die');
    await eventually(
      async () => (await deliveriesOf(ids.github)).deliveries.every((d) => d.state === 'delivered'),
      'the GitHub event delivered',
    );
    const events = await call(server, '/api/events');
    expect((events.json() as { events: { forward_state?: string }[] }).events.some((e) => e.forward_state)).toBe(true);
    expectDocumented('/api/events', 'GET', events);

    const p = '/api/events/{id}/deliveries';
    expectDocumented(p, 'GET', await call(server, `/api/events/${ids.github}/deliveries`));
    expectDocumented(p, 'GET', await call(server, `/api/events/${ids.token}/deliveries`));
    expectDocumented(p, 'GET', await call(server, `/api/events/${UNKNOWN}/deliveries`));
    expectDocumented(p, 'GET', await call(server, '/api/events/nope/deliveries'));

    expectDocumented('/api/forwards', 'GET', await call(server, '/api/forwards'));
    expectDocumented('/api/forwards', 'GET', await call(server, '/api/forwards', { token: null }));

    const r = '/api/deliveries/{id}/retry';
    expectDocumented(r, 'POST', await call(server, `/api/deliveries/${dead.id}/retry`, { method: 'POST' }));
    const delivered = (await deliveriesOf(ids.github)).deliveries[0]?.id ?? '';
    expectDocumented(r, 'POST', await call(server, `/api/deliveries/${delivered}/retry`, { method: 'POST' }));
    expectDocumented(r, 'POST', await call(server, `/api/deliveries/${UNKNOWN}/retry`, { method: 'POST' }));
    expectDocumented(r, 'POST', await call(server, '/api/deliveries/nope/retry', { method: 'POST' }));

    for (const action of ['retry-dead', 'pause', 'resume']) {
      const path = `/api/forwards/{name}/${action}`;
      expectDocumented(path, 'POST', await call(server, `/api/forwards/nowhere/${action}`, { method: 'POST' }));
      expectDocumented(path, 'POST', await call(server, `/api/forwards/unknown/${action}`, { method: 'POST' }));
    }
    // No provider here answers through listen: every reply id is unknown; the success and the
    // refusals of a real pending reply are test/listen/listen-reply.test.ts's.
    const answer = '/api/replies/{id}';
    expectDocumented(answer, 'POST', await call(server, `/api/replies/${UNKNOWN}`, { method: 'POST' }));
    expectDocumented(answer, 'POST', await call(server, '/api/replies/nope', { method: 'POST' }));
    expectDocumented(answer, 'POST', await call(server, `/api/replies/${UNKNOWN}`, { method: 'POST', token: null }));
  });

  it('covered every documented path', () => {
    const paths = new Set(checked.map((c) => c.split(' ')[1]));
    expect([...paths].sort()).toEqual(Object.keys(openapi.paths).sort());
  });
});

describe('real stream messages match docs/reference/asyncapi.yaml', () => {
  const schemaOf = (name: string): ValidateFunction => {
    const ref = asyncapi.components.messages[name]?.payload.$ref ?? '';
    const schema = asyncapi.components.schemas[ref.replace('#/components/schemas/', '')];
    if (!schema) throw new Error(`asyncapi: no payload schema for message ${name}`);
    return ajv.compile(schema);
  };

  it('documents /api/stream with event and reset messages', () => {
    expect(asyncapi.asyncapi).toMatch(/^3\./);
    expect(Object.values(asyncapi.channels).map((c) => c.address)).toEqual(['/api/stream']);
    expect(Object.keys(asyncapi.components.messages).sort()).toEqual(['event', 'reset']);
  });

  it('its ApiEventSummary is the schemas/ one, so the copy cannot drift', () => {
    expect(asyncapi.components.schemas['ApiEventSummary']).toEqual(SCHEMAS.ApiEventSummary);
  });

  it('every event message of a live stream validates against the payload schema', async () => {
    const validateEvent = schemaOf('event');
    const validateReset = schemaOf('reset');
    const conn = await openStream(server);
    try {
      await conn.waitForComments(1);
      await sendSignedGithub(server);
      await sendOpen(server, Buffer.from([1, 2, 3]), 'application/octet-stream');
      await sendToken(server, { type: 'stream.contract' });
      await sendBadlySignedGithub(server);
      const messages = await conn.waitForMessages(4);
      for (const m of messages) {
        expect(m.event).toBe('event');
        const payload = JSON.parse(m.data) as unknown;
        expect(validateEvent(payload), ajv.errorsText(validateEvent.errors)).toBe(true);
        expect(m.id).toBe((payload as { id: string }).id);
      }
      await conn.waitForComments(2);
    } finally {
      conn.close();
    }
    const reset = await openStream(server, { lastEventId: UNKNOWN });
    try {
      const [message] = await reset.waitForMessages(1);
      expect(message?.event).toBe('reset');
      expect(validateReset(JSON.parse(message?.data ?? 'null')), ajv.errorsText(validateReset.errors)).toBe(true);
    } finally {
      reset.close();
    }
  });
});
