/**
 * The hostile-input surfaces: for each, a fast-check arbitrary of inputs and a check that runs
 * one input against a live switchboard and throws if the outcome breaks a rule. The fast tests
 * (test/fuzz/*.test.ts, a few hundred seeded cases each) and bench/fuzz.ts (10,000+ per surface)
 * run exactly these.
 *
 * Rules for every input:
 *   - no 5xx answer except the documented 503s (MCP session cap, database down — the latter does
 *     not occur here);
 *   - no `internal` error: not as an HTTP envelope, not as a tool error, not as JSON-RPC -32603;
 *   - rejected inputs change no stored row (tables hashed before and after);
 *   - accepted deliveries are stored with exactly the bytes sent;
 *   - the server keeps answering (checked between batches by the callers) and reports no
 *     unhandled rejection (target.faults()).
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createParser } from 'eventsource-parser';
import fc from 'fast-check';
import { z } from 'zod';
import { sql } from 'slonik';
import { request } from 'undici';
import { parseConfig } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/config/config-error.ts';
import { sendRaw, type RawResponse } from '../../support/raw-socket.ts';
import { FUZZ_GITHUB_SECRET, FUZZ_HOOK_TOKEN, tableSnapshot, type FuzzTarget } from './target.ts';

export class RuleBroken extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RuleBroken';
  }
}

function fail(message: string): never {
  throw new RuleBroken(message);
}

export interface Surface<Case> {
  name: string;
  arbitrary: (target: FuzzTarget, state: SurfaceState) => fc.Arbitrary<Case>;
  /** Runs one case; throws RuleBroken when a rule is broken. Returns a label for statistics. */
  run: (target: FuzzTarget, state: SurfaceState, input: Case) => Promise<string>;
  /** Set-up before the cases (a session, some stored events). */
  prepare?: (target: FuzzTarget, state: SurfaceState) => Promise<void>;
}

/** Shared across the cases of one run: ids and cursors that exist, an open MCP session. */
export interface SurfaceState {
  eventIds: string[];
  cursors: string[];
  sessionId: string;
  /** delivery id → the first body stored under it (a later delivery with that id is a duplicate). */
  deliveries: Map<string, Buffer>;
}

export function newState(): SurfaceState {
  return { eventIds: [], cursors: [], sessionId: '', deliveries: new Map() };
}

// -- HTTP plumbing ----------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

async function send(
  target: FuzzTarget,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<Answer> {
  const response = await request(`${target.url}${path}`, {
    method: method as 'GET',
    headers,
    ...(body === undefined ? {} : { body }),
    dispatcher: target.agent,
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  });
  const text = await response.body.text();
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers))
    flat[name] = Array.isArray(value) ? value.join(', ') : String(value ?? '');
  return { status: response.statusCode, headers: flat, text };
}

/** The JSON-RPC messages in an MCP answer (application/json or text/event-stream). */
export function jsonRpcMessages(answer: Pick<Answer, 'headers' | 'text'>): unknown[] {
  const type = answer.headers['content-type'] ?? '';
  const parse = (text: string): unknown[] => {
    try {
      const value: unknown = JSON.parse(text);
      return Array.isArray(value) ? value : [value];
    } catch {
      return [];
    }
  };
  if (type.startsWith('text/event-stream')) {
    const data: string[] = [];
    const parser = createParser({ onEvent: (message) => data.push(message.data) });
    // A stream cut after its last data line still yields that message: two line ends dispatch it.
    parser.feed(`${answer.text}\n\n`);
    return data.flatMap(parse);
  }
  return parse(answer.text);
}

/** Fails on a 5xx (other than an allowed 503) or any form of `internal` in the answer. */
function checkAnswer(what: string, answer: Answer, options: { allow503?: RegExp } = {}): void {
  if (answer.status >= 500) {
    const allowed = answer.status === 503 && options.allow503 !== undefined && options.allow503.test(answer.text);
    if (!allowed) fail(`${what}: answered ${answer.status}: ${answer.text.slice(0, 400)}`);
  }
  for (const message of jsonRpcMessages(answer)) {
    const m = message as {
      error?: { code?: unknown; message?: unknown };
      result?: { isError?: unknown; content?: Array<{ text?: unknown }> };
    };
    if (m?.error?.code === -32603) fail(`${what}: JSON-RPC internal error: ${String(m.error.message)}`);
    if (m?.error?.code === 'internal') fail(`${what}: internal error envelope: ${String(m.error.message)}`);
    if (m?.result?.isError === true) {
      const first = m.result.content?.[0]?.text;
      const text = typeof first === 'string' ? first : JSON.stringify(first ?? '');
      if (/"code"\s*:\s*"internal"/.test(text)) fail(`${what}: tool answered internal: ${text.slice(0, 400)}`);
    }
  }
  if (/"code"\s*:\s*"internal"/.test(answer.text))
    fail(`${what}: internal error in the answer: ${answer.text.slice(0, 400)}`);
}

/** The tables a read or a refused request must leave exactly as they were. */
const STORED_TABLES = ['events', 'replay_attempts', 'api_tokens', 'settings'] as const;

function sameSnapshot(
  what: string,
  before: Record<string, string>,
  after: Record<string, string>,
  tables: readonly string[],
): void {
  for (const table of tables) {
    if (before[table] !== after[table])
      fail(`${what}: rejected input changed ${table} (${before[table]} → ${after[table]})`);
  }
}

/** The gist of a refusal, for outcome statistics: the error message up to its first detail. */
function refusal(answer: Answer): string {
  const [message] = jsonRpcMessages(answer) as Array<{ error?: { message?: unknown } }>;
  const text = typeof message?.error?.message === 'string' ? message.error.message : '';
  return text.split(/[:;(]/)[0]?.slice(0, 48) ?? '';
}

const MCP_ACCEPT = 'application/json, text/event-stream';
const PROTOCOL_VERSION = '2025-06-18';

export async function openMcpSession(target: FuzzTarget): Promise<string> {
  const init = await send(
    target,
    'POST',
    '/mcp',
    { authorization: `Bearer ${target.token}`, 'content-type': 'application/json', accept: MCP_ACCEPT },
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
    }),
  );
  const sessionId = init.headers['mcp-session-id'];
  if (init.status !== 200 || sessionId === undefined)
    throw new Error(`could not open an MCP session: ${init.status} ${init.text}`);
  await postInSession(target, sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' });
  return sessionId;
}

/** A JSON-RPC message POSTed to /mcp in an open session. */
function postInSession(target: FuzzTarget, sessionId: string, message: unknown): ReturnType<typeof send> {
  return send(
    target,
    'POST',
    '/mcp',
    {
      authorization: `Bearer ${target.token}`,
      'content-type': 'application/json',
      accept: MCP_ACCEPT,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': PROTOCOL_VERSION,
    },
    JSON.stringify(message),
  );
}

async function closeSession(target: FuzzTarget, sessionId: string): Promise<void> {
  await send(target, 'DELETE', '/mcp', { authorization: `Bearer ${target.token}`, 'mcp-session-id': sessionId }).catch(
    () => undefined,
  );
}

async function seedEvents(target: FuzzTarget, state: SurfaceState): Promise<void> {
  for (let i = 0; i < 12; i += 1) {
    const body = JSON.stringify({ type: i % 2 === 0 ? 'fuzz.seed' : 'other.kind', i });
    const answer = await send(target, 'POST', '/hooks/open', { 'content-type': 'application/json' }, body);
    const id = (JSON.parse(answer.text) as { id?: string }).id;
    if (id !== undefined) state.eventIds.push(id);
  }
  const page = await send(target, 'GET', '/api/events?limit=3', { authorization: `Bearer ${target.token}` });
  const cursor = (JSON.parse(page.text) as { next_cursor?: string }).next_cursor;
  if (cursor !== undefined) state.cursors.push(cursor);
}

// -- shared arbitraries --------------------------------------------------------------------------

const anyJson = fc.jsonValue({ maxDepth: 3 });
const shortText = fc.string({ maxLength: 80, unit: 'binary' });

/** A valid cursor with one character changed, truncated or extended. */
const mutate = (text: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc
      .nat({ max: Math.max(0, text.length - 1) })
      .chain((i) =>
        fc
          .constantFrom('A', '_', '-', '=', '/', '+', '%', '\u00e9')
          .map((c) => text.slice(0, i) + c + text.slice(i + 1)),
      ),
    fc.nat({ max: text.length }).map((i) => text.slice(0, i)),
    shortText.map((extra) => text + extra),
  );

export function cursorArbitrary(state: SurfaceState): fc.Arbitrary<string> {
  const valid = fc.constantFrom(
    ...(state.cursors.length > 0 ? state.cursors : ['AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']),
  );
  return fc.oneof(
    valid,
    valid.chain(mutate),
    fc.base64String({ minLength: 36, maxLength: 44 }),
    fc.stringMatching(/^[A-Za-z0-9_-]{39}$/),
    fc.string({ minLength: 1, maxLength: 600 }),
    fc.constantFrom('', ' ', 'null', '0', '-1', '%00', '\u0000', 'AAAA'.repeat(200)),
  );
}

export const sinceArbitrary: fc.Arbitrary<string> = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString().replace('Z', '+14:00')),
  fc.constantFrom(
    '2024-13-45T25:61:61Z',
    '0000-00-00T00:00:00Z',
    '-271821-04-20T00:00:00Z',
    '+275760-09-13T00:00:00.000Z',
    '9999-12-31T23:59:59.999999999Z',
    '2024-02-30T00:00:00Z',
    '1970-01-01',
    'yesterday',
    '5m',
    'NaN',
    'Infinity',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
  ),
  fc.uuid(),
  fc.string({ minLength: 1, maxLength: 70 }),
  fc.integer().map(String),
);

function eventIdArbitrary(state: SurfaceState): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...(state.eventIds.length > 0 ? state.eventIds : [randomUUID()])) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 1, arbitrary: fc.string({ maxLength: 64 }) },
    { weight: 1, arbitrary: anyJson },
  );
}

/**
 * Replay targets kept on this machine: the local consumer, a closed loopback port, switchboard
 * itself (a loop it must refuse), and strings that are not acceptable URLs at all. No other host
 * names or addresses are generated, so a fuzzed replay can never send traffic anywhere else.
 */
function targetUrlArbitrary(target: FuzzTarget): fc.Arbitrary<unknown> {
  const path = fc.stringMatching(/^[a-zA-Z0-9/_.~%-]{0,40}$/);
  return fc.oneof(
    path.map((p) => `http://127.0.0.1:${target.consumerPort}/${p}`),
    path.map((p) => `http://localhost:${target.consumerPort}/${p}`),
    path.map((p) => `http://[::1]:${target.consumerPort}/${p}`),
    fc.constant(`http://127.0.0.1:${target.closedPort}/`),
    fc
      .constantFrom('/hooks/github', '/hooks/open', '/mcp', '/HOOKS/open', '/%68ooks/open')
      .map((p) => `http://127.0.0.1:${target.port}${p}`),
    fc.constantFrom(
      'ftp://127.0.0.1/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'http://',
      'http://127.0.0.1:0/',
      'http://127.0.0.1:99999/',
      'http://user:pass@127.0.0.1/',
      '127.0.0.1',
      'http://[::ffff:127.0.0.1]:1/',
      'http://0x7f.1:1/',
      '',
    ),
    // Random text: a URL needs "scheme://" to reach name resolution, which these never have.
    fc.string({ maxLength: 100 }).filter((s) => !s.includes('://')),
    anyJson,
  );
}

// -- 1. JSON-RPC to /mcp ---------------------------------------------------------------------------

const MCP_METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'resources/templates/list',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/roots/list_changed',
];

export interface JsonRpcCase {
  body: Buffer;
  session: 'none' | 'valid' | 'random';
  contentType: string;
  accept: string;
  protocolVersion: string | undefined;
}

const jsonRpcParams = fc.oneof(
  { weight: 1, arbitrary: anyJson },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        name: fc.oneof(
          fc.constantFrom('list_webhook_events', 'get_webhook_event', 'list_providers', 'replay_webhook_event'),
          fc.string({ maxLength: 30 }),
        ),
        arguments: anyJson,
        uri: fc.oneof(fc.constant('switchboard://events/recent'), fc.string({ maxLength: 60 })),
        protocolVersion: fc.oneof(
          fc.constantFrom('2025-06-18', '2025-03-26', '2024-11-05'),
          fc.string({ maxLength: 12 }),
        ),
        capabilities: anyJson,
        clientInfo: anyJson,
        level: fc.string({ maxLength: 10 }),
        cursor: fc.string({ maxLength: 50 }),
        _meta: fc.oneof(
          { weight: 4, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 2 }) },
          { weight: 1, arbitrary: anyJson },
        ),
      },
      { requiredKeys: [] },
    ),
  },
);
const jsonRpcMethod = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...MCP_METHODS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: anyJson },
);
const jsonRpcId = fc.oneof(
  { weight: 6, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.double(), fc.boolean(), anyJson) },
);

/** Mostly well-framed requests (so the server, not just the transport's framing check, is exercised), then everything else. */
const jsonRpcMessage = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      { jsonrpc: fc.constant('2.0'), id: jsonRpcId, method: jsonRpcMethod, params: jsonRpcParams },
      { requiredKeys: ['jsonrpc', 'id', 'method'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      { jsonrpc: fc.constant('2.0'), method: jsonRpcMethod, params: jsonRpcParams },
      { requiredKeys: ['jsonrpc', 'method'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      { jsonrpc: fc.constant('2.0'), id: jsonRpcId, result: anyJson, error: anyJson },
      { requiredKeys: ['jsonrpc'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        jsonrpc: anyJson,
        id: jsonRpcId,
        method: jsonRpcMethod,
        params: jsonRpcParams,
        result: anyJson,
        error: anyJson,
      },
      { requiredKeys: [] },
    ),
  },
);

export const jsonRpcSurface: Surface<JsonRpcCase> = {
  name: 'mcp-jsonrpc',
  prepare: async (target, state) => {
    state.sessionId = await openMcpSession(target);
  },
  arbitrary: () =>
    fc.record({
      body: fc.oneof(
        { weight: 6, arbitrary: jsonRpcMessage.map((m) => Buffer.from(JSON.stringify(m))) },
        { weight: 2, arbitrary: fc.array(jsonRpcMessage, { maxLength: 5 }).map((m) => Buffer.from(JSON.stringify(m))) },
        { weight: 1, arbitrary: anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
        {
          weight: 1,
          arbitrary: jsonRpcMessage.chain((m) =>
            fc.nat().map((cut) => {
              const t = JSON.stringify(m);
              return Buffer.from(t.slice(0, cut % (t.length + 1)));
            }),
          ),
        },
        { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)) },
        { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
        {
          weight: 1,
          arbitrary: fc
            .constantFrom(
              '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_webhook_events","arguments":{"limit":1e400}}}',
              '[]',
              '[[]]',
              '{"__proto__":{"x":1}}',
              `[${'['.repeat(5000)}${']'.repeat(5000)}]`,
            )
            .map((s) => Buffer.from(s)),
        },
      ),
      session: fc.constantFrom('none' as const, 'valid' as const, 'valid' as const, 'random' as const),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constant('application/json') },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            'text/plain',
            'application/json; charset=latin1',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
          ),
        },
      ),
      accept: fc.oneof(
        { weight: 8, arbitrary: fc.constant(MCP_ACCEPT) },
        { weight: 1, arbitrary: fc.constantFrom('application/json', 'text/event-stream', '*/*', 'text/html') },
      ),
      protocolVersion: fc.oneof(
        fc.constant(PROTOCOL_VERSION),
        fc.constant(undefined),
        fc.constantFrom('1999-01-01', 'garbage'),
      ),
    }),
  run: async (target, state, input) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${target.token}`,
      'content-type': input.contentType,
      accept: input.accept,
    };
    if (input.protocolVersion !== undefined) headers['mcp-protocol-version'] = input.protocolVersion;
    if (input.session === 'valid') headers['mcp-session-id'] = state.sessionId;
    if (input.session === 'random') headers['mcp-session-id'] = randomUUID();
    const answer = await send(target, 'POST', '/mcp', headers, input.body);
    checkAnswer('POST /mcp', answer, { allow503: /too many MCP sessions/ });
    // A fuzzed initialize that opened a session: end it, so sessions do not pile up.
    const opened = answer.headers['mcp-session-id'];
    if (opened !== undefined && opened !== state.sessionId) await closeSession(target, opened);
    return `${answer.status}${answer.status >= 400 ? ` ${refusal(answer)}` : ''}`;
  },
};

// -- 2. tool arguments, cursors, since values ----------------------------------------------------

export interface ToolCase {
  name: string;
  args: unknown;
}

export const toolsSurface: Surface<ToolCase> = {
  name: 'mcp-tools',
  prepare: async (target, state) => {
    await seedEvents(target, state);
    state.sessionId = await openMcpSession(target);
  },
  arbitrary: (target, state) => {
    const extra = fc.dictionary(fc.string({ maxLength: 10 }), anyJson, { maxKeys: 2 });
    // Mostly valid arguments with one field fuzzed, so the odd value gets past the schema check
    // into the store (cursor decoding, since parsing); then entirely random argument objects.
    const validBase = fc.record(
      {
        provider: fc.constantFrom('open', 'github', 'hook', 'nope'),
        event_type: fc.constantFrom('fuzz', 'fuzz.seed', 'other', 'a.b.c'),
        limit: fc.integer({ min: 1, max: 200 }),
      },
      { requiredKeys: [] },
    );
    const oneOdd = fc.oneof(
      cursorArbitrary(state).map((cursor) => ({ cursor })),
      cursorArbitrary(state).map((cursor) => ({ cursor, since: state.eventIds[0] ?? 'x' })),
      sinceArbitrary.map((since) => ({ since })),
      fc.constantFrom(...(state.eventIds.length ? state.eventIds : ['x'])).map((since) => ({ since })),
      fc
        .oneof(fc.integer({ min: -5, max: 250 }), fc.double(), fc.constantFrom('10', 0, 1e308, -0))
        .map((limit) => ({ limit })),
      fc.string({ maxLength: 70 }).map((provider) => ({ provider })),
      fc.string({ maxLength: 210 }).map((event_type) => ({ event_type })),
    );
    const anyList = fc.record(
      {
        provider: anyJson,
        event_type: anyJson,
        since: fc.oneof(sinceArbitrary, anyJson),
        limit: anyJson,
        cursor: fc.oneof(cursorArbitrary(state), anyJson),
      },
      { requiredKeys: [] },
    );
    const listArgs = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(validBase, oneOdd).map(([base, odd]) => ({ ...base, ...odd })) },
      { weight: 1, arbitrary: anyList },
    );
    return fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .tuple(listArgs, fc.option(extra))
          .map(([a, e]) => ({ name: 'list_webhook_events', args: e === null ? a : { ...a, ...e } })),
      },
      {
        weight: 3,
        arbitrary: fc
          .record({ id: eventIdArbitrary(state) }, { requiredKeys: [] })
          .map((args) => ({ name: 'get_webhook_event', args })),
      },
      {
        weight: 3,
        arbitrary: fc
          .record({ id: eventIdArbitrary(state), target_url: targetUrlArbitrary(target) }, { requiredKeys: [] })
          .map((args) => ({ name: 'replay_webhook_event', args })),
      },
      { weight: 1, arbitrary: fc.option(extra).map((args) => ({ name: 'list_providers', args: args ?? {} })) },
      {
        weight: 1,
        arbitrary: fc.record({
          name: fc.constantFrom(
            'list_webhook_events',
            'get_webhook_event',
            'replay_webhook_event',
            'list_providers',
            'unknown_tool',
            '',
          ),
          args: anyJson,
        }),
      },
    );
  },
  run: async (target, state, input) => {
    const before = await tableSnapshot(target.pool, ['events', 'api_tokens', 'settings']);
    const answer = await postInSession(target, state.sessionId, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: input.name, arguments: input.args },
    });
    checkAnswer(`tools/call ${input.name}`, answer);
    if (answer.status !== 200) fail(`tools/call ${input.name}: HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
    const [message] = jsonRpcMessages(answer) as Array<{
      result?: { isError?: boolean; content?: Array<{ text?: string }>; structuredContent?: { next_cursor?: string } };
      error?: { code: number };
    }>;
    if (message === undefined) fail(`tools/call ${input.name}: no JSON-RPC answer: ${answer.text.slice(0, 300)}`);
    // Reads and refused replays store nothing (a replay's audit row is replay_attempts, by design).
    sameSnapshot(
      `tools/call ${input.name}`,
      before,
      await tableSnapshot(target.pool, ['events', 'api_tokens', 'settings']),
      ['events', 'api_tokens', 'settings'],
    );
    const next = message.result?.structuredContent?.next_cursor;
    if (typeof next === 'string' && state.cursors.length < 50) state.cursors.push(next);
    if (message.error !== undefined) return `jsonrpc ${message.error.code}`;
    if (message.result?.isError === true) {
      const code = /"code"\s*:\s*"([a-z_]+)"/.exec(message.result.content?.[0]?.text ?? '')?.[1] ?? '?';
      return `${input.name} ${code}`;
    }
    return `${input.name} ok`;
  },
};

// -- 3. list query strings on /api/events ------------------------------------------------------------

export interface QueryCase {
  params: Array<[string, string]>;
}

export const apiQuerySurface: Surface<QueryCase> = {
  name: 'api-query',
  prepare: seedEvents,
  arbitrary: (_target, state) =>
    fc.record({
      params: fc.array(
        fc.oneof(
          cursorArbitrary(state).map((v) => ['cursor', v] as [string, string]),
          sinceArbitrary.map((v) => ['since', v] as [string, string]),
          fc
            .oneof(fc.integer({ min: -5, max: 300 }).map(String), fc.string({ maxLength: 8 }))
            .map((v) => ['limit', v] as [string, string]),
          fc.string({ maxLength: 70 }).map((v) => ['provider', v] as [string, string]),
          fc.string({ maxLength: 210 }).map((v) => ['event_type', v] as [string, string]),
          fc.string({ maxLength: 210 }).map((v) => ['q', v] as [string, string]),
          fc
            .oneof(
              anyJson.map((v) => JSON.stringify(v) ?? ''),
              fc.string({ maxLength: 50 }),
            )
            .map((v) => ['match', v] as [string, string]),
          sinceArbitrary.map((v) => ['from', v] as [string, string]),
          sinceArbitrary.map((v) => ['to', v] as [string, string]),
          fc.constantFrom('true', 'false', '1', 'yes', '').map((v) => ['verified', v] as [string, string]),
          fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })),
        ),
        { maxLength: 5 },
      ),
    }),
  run: async (target, _state, input) => {
    const query = new URLSearchParams(input.params).toString();
    const before = await tableSnapshot(target.pool);
    const answer = await send(target, 'GET', `/api/events?${query}`, { authorization: `Bearer ${target.token}` });
    checkAnswer(`GET /api/events?${query.slice(0, 200)}`, answer);
    sameSnapshot('GET /api/events', before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${answer.status}`;
  },
};

// -- 4. headers over raw sockets ---------------------------------------------------------------------

export interface HeaderCase {
  method: string;
  path: string;
  headers: Array<[string, Buffer]>;
  body: Buffer;
  framing:
    'length' | 'chunked' | 'none' | 'duplicate-length-same' | 'duplicate-length-different' | 'length-and-chunked';
  auth: 'valid' | 'invalid' | 'none';
}

const HEADER_NAMES = [
  'authorization',
  'content-type',
  'accept',
  'host',
  'x-hub-signature-256',
  'x-github-event',
  'x-github-delivery',
  'x-webhook-token',
  'mcp-session-id',
  'mcp-protocol-version',
  'x-request-id',
  'x-forwarded-for',
  'last-event-id',
  'cookie',
  'origin',
  'expect',
  'connection',
  'user-agent',
];

const headerValue: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 60 }).map((s) => Buffer.from(s.replace(/[\r\n]/g, ''), 'utf8')) },
  // Bytes Node's own client refuses to send: obs-text, invalid UTF-8, control characters.
  {
    weight: 3,
    arbitrary: fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b.filter((x) => x !== 0x0d && x !== 0x0a))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from([0xff, 0xfe, 0xfd]),
      Buffer.from([0xc3, 0x28]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('Bearer \u00ff\u00fe', 'latin1'),
    ),
  },
  // Huge: past Node's 16 KiB header limit sometimes.
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 20_000 }).map((n) => Buffer.alloc(n, 0x61)) },
  // Header injection attempts: a bare CR or LF inside a value.
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from('a\rb'),
      Buffer.from('a\nX-Injected: 1'),
      Buffer.from('\r\n\r\nGET / HTTP/1.1'),
    ),
  },
);

export const headersSurface: Surface<HeaderCase> = {
  name: 'headers',
  arbitrary: () =>
    fc.record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS', 'PATCH') },
        { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{1,12}$/) },
      ),
      path: fc.oneof(
        fc.constantFrom(
          '/hooks/github',
          '/hooks/hook',
          '/api/events',
          '/api/events?limit=2',
          '/mcp',
          '/healthz',
          '/metrics',
          '/',
          '/api/providers',
          '/hooks/nope',
          '/api/events/not-a-uuid/raw',
        ),
        fc.stringMatching(/^\/[\x21-\x7e]{0,60}$/),
      ),
      headers: fc.array(
        fc.tuple(
          fc.oneof(
            { weight: 4, arbitrary: fc.constantFrom(...HEADER_NAMES) },
            { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,30}$/) },
          ),
          headerValue,
        ),
        { maxLength: 8 },
      ),
      body: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      framing: fc.constantFrom(
        'length',
        'length',
        'chunked',
        'none',
        'duplicate-length-same',
        'duplicate-length-different',
        'length-and-chunked',
      ),
      auth: fc.constantFrom('valid' as const, 'invalid' as const, 'none' as const),
    }),
  run: async (target, _state, input) => {
    // The ingest routes here never see a valid signature or token, so nothing may be stored.
    const before = await tableSnapshot(target.pool);
    const lines: Buffer[] = [
      Buffer.from(
        `${input.method} ${input.path} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\nConnection: close\r\n`,
        'latin1',
      ),
    ];
    if (input.auth === 'valid') lines.push(Buffer.from(`Authorization: Bearer ${target.token}\r\n`));
    if (input.auth === 'invalid') lines.push(Buffer.from('Authorization: Bearer not-the-token\r\n'));
    for (const [name, value] of input.headers) {
      // Framing headers are set below on purpose, never at random (a declared length larger than
      // the body would only make the server wait for bytes that never come).
      if (name.toLowerCase() === 'content-length' || name.toLowerCase() === 'transfer-encoding') continue;
      lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), value, Buffer.from('\r\n')]));
    }
    let body: Buffer = Buffer.alloc(0);
    switch (input.framing) {
      case 'length':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\n`));
        body = input.body;
        break;
      case 'chunked':
        lines.push(Buffer.from('Transfer-Encoding: chunked\r\n'));
        body =
          input.body.length === 0
            ? Buffer.from('0\r\n\r\n')
            : Buffer.concat([
                Buffer.from(`${input.body.length.toString(16)}\r\n`),
                input.body,
                Buffer.from('\r\n0\r\n\r\n'),
              ]);
        break;
      case 'duplicate-length-same':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nContent-Length: ${input.body.length}\r\n`));
        body = input.body;
        break;
      case 'duplicate-length-different':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nContent-Length: ${input.body.length + 1}\r\n`));
        body = input.body;
        break;
      case 'length-and-chunked':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nTransfer-Encoding: chunked\r\n`));
        body = Buffer.concat([
          Buffer.from(`${input.body.length.toString(16)}\r\n`),
          input.body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]);
        break;
      case 'none':
        break;
    }
    lines.push(Buffer.from('\r\n'));
    const bytes = Buffer.concat([...lines, body]);
    const response: RawResponse | null = await sendRaw(target.port, bytes, 10_000);
    if (response === null) {
      // Closed without an answer: acceptable only for requests Node's parser refuses outright.
      return 'closed';
    }
    const text = response.body.toString('utf8');
    checkAnswer(`${input.method} ${input.path.slice(0, 60)} (raw)`, {
      status: response.status,
      headers: response.headers,
      text,
    });
    if (response.headers['mcp-session-id'] !== undefined)
      await closeSession(target, response.headers['mcp-session-id']);
    sameSnapshot('raw request', before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${response.status}`;
  },
};

// -- 5. webhook bodies ------------------------------------------------------------------------------------

export interface WebhookCase {
  provider: 'github' | 'hook' | 'open';
  body: Buffer;
  credential: 'valid' | 'wrong' | 'malformed' | 'missing' | 'valid-other-body';
  contentType: string | undefined;
  event: string | undefined;
  delivery: 'fresh' | 'reuse' | 'none' | 'junk';
  junk: string;
}

const bodyArbitrary: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 2_048 }).map((b) => Buffer.from(b)),
  anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? '')),
  fc.string({ maxLength: 500, unit: 'binary' }).map((s) => Buffer.from(s, 'utf8')),
  fc.constantFrom(
    Buffer.alloc(0),
    Buffer.from('\u0000'),
    Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
    Buffer.from('{"a":"\\u0000"}'),
    Buffer.from('{"n":1e999}'),
  ),
  fc.integer({ min: 60_000, max: 70_000 }).map((n) => Buffer.alloc(n, 0x7b)),
);

export const webhookSurface: Surface<WebhookCase> = {
  name: 'webhook-bodies',
  arbitrary: () =>
    fc.record({
      provider: fc.constantFrom('github' as const, 'github' as const, 'hook' as const, 'open' as const),
      body: bodyArbitrary,
      credential: fc.constantFrom(
        'valid' as const,
        'valid' as const,
        'wrong' as const,
        'malformed' as const,
        'missing' as const,
        'valid-other-body' as const,
      ),
      contentType: fc.option(
        fc.oneof(
          fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain; charset=utf-8'),
          fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, '')),
        ),
        { nil: undefined },
      ),
      event: fc.option(
        fc.oneof(
          fc.constantFrom('issues', 'push', 'ping'),
          fc.string({ maxLength: 300 }).map((s) => s.replace(/[\r\n]/g, '')),
        ),
        { nil: undefined },
      ),
      delivery: fc.constantFrom('fresh' as const, 'fresh' as const, 'reuse' as const, 'none' as const, 'junk' as const),
      junk: fc.string({ maxLength: 300 }).map((s) => s.replace(/[\r\n]/g, '')),
    }),
  run: async (target, state, input) => {
    const headers: Record<string, string> = {};
    if (input.contentType !== undefined) headers['content-type'] = input.contentType;
    const secretFor = input.credential === 'wrong' ? 'not-the-secret' : FUZZ_GITHUB_SECRET;
    const signedBody =
      input.credential === 'valid-other-body' ? Buffer.concat([input.body, Buffer.from('x')]) : input.body;
    let deliveryId: string | undefined;
    if (input.provider === 'github') {
      if (input.event !== undefined) headers['x-github-event'] = input.event;
      if (input.credential === 'malformed') headers['x-hub-signature-256'] = input.junk;
      else if (input.credential !== 'missing')
        headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', secretFor).update(signedBody).digest('hex')}`;
      const reusable = [...state.deliveries.keys()];
      deliveryId =
        input.delivery === 'fresh'
          ? randomUUID()
          : input.delivery === 'reuse' && reusable.length > 0
            ? reusable[reusable.length - 1]
            : input.delivery === 'junk'
              ? input.junk
              : undefined;
      if (deliveryId !== undefined) headers['x-github-delivery'] = deliveryId;
    } else if (input.provider === 'hook') {
      if (input.credential === 'valid' || input.credential === 'valid-other-body')
        headers['x-webhook-token'] = FUZZ_HOOK_TOKEN;
      if (input.credential === 'wrong') headers['x-webhook-token'] = 'not-the-token';
      if (input.credential === 'malformed') headers.authorization = input.junk;
    }
    const shouldAccept =
      input.provider === 'open' ||
      (input.provider === 'github' && input.credential === 'valid') ||
      (input.provider === 'hook' && (input.credential === 'valid' || input.credential === 'valid-other-body'));
    const tooLarge = input.body.length > 64 * 1024;
    const before = await tableSnapshot(target.pool);
    let answer: Answer;
    try {
      answer = await send(target, 'POST', `/hooks/${input.provider}`, headers, input.body);
    } catch (err) {
      // undici refuses some header values itself (e.g. non-visible characters) before sending.
      if (err instanceof Error && /invalid .*header|InvalidArgumentError/i.test(`${err.name} ${err.message}`))
        return 'client-refused';
      throw err;
    }
    checkAnswer(`POST /hooks/${input.provider}`, answer);
    if (shouldAccept && !tooLarge) {
      if (answer.status !== 200)
        fail(`a valid ${input.provider} delivery was refused: ${answer.status} ${answer.text.slice(0, 300)}`);
      const { id, duplicate } = JSON.parse(answer.text) as { id: string; duplicate: boolean };
      const row = await target.pool.one(
        sql.type(
          z.object({ payload: z.instanceof(Buffer), provider: z.string(), external_id: z.string().nullable() }),
        )`SELECT payload, provider, external_id FROM events WHERE id = ${id}::uuid`,
      );
      if (duplicate) {
        // A retry of a stored delivery: answered with the first row, and nothing added.
        if (row.provider !== input.provider || row.external_id === null)
          fail(`duplicate answered with an unrelated row ${id}`);
        sameSnapshot('duplicate delivery', before, await tableSnapshot(target.pool), ['events']);
      } else if (!row.payload.equals(input.body)) {
        fail(`stored bytes differ from the bytes sent (${row.payload.length} vs ${input.body.length})`);
      }
      if (!duplicate && deliveryId !== undefined && input.provider === 'github' && !state.deliveries.has(deliveryId)) {
        // Remembered so later cases can resend the same delivery id (a provider's retry).
        state.deliveries.set(deliveryId, input.body);
        if (state.deliveries.size > 200) state.deliveries.delete(state.deliveries.keys().next().value as string);
      }
      return `${input.provider} stored${duplicate ? ' (duplicate)' : ''}`;
    }
    if (answer.status < 400)
      fail(`a delivery that should be refused was accepted: ${input.provider} ${input.credential} → ${answer.status}`);
    sameSnapshot(`refused ${input.provider} delivery`, before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${input.provider} ${answer.status}`;
  },
};

// -- 6. config files ----------------------------------------------------------------------------------------

const PROVIDER_KEYS = [
  'preset',
  'family',
  'trust_mode',
  'enabled',
  'route',
  'secret',
  'token',
  'token_header',
  'tolerance_seconds',
  'max_body_bytes',
  'record_rejected',
  'event_type_from',
  'external_id_from',
  'hmac',
  'replay',
  'channel',
  'mode',
  'pattern',
  'group',
];
const PRESETS = [
  'github',
  'stripe',
  'slack',
  'shopify',
  'standard-webhooks',
  'linear',
  'generic-hmac',
  'token',
  'gitlab',
  'open',
];

const configValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    ...PRESETS,
    'webhook',
    'queue',
    'signed',
    'token',
    'open',
    'pubsub',
    'streams',
    true,
    false,
    0,
    -1,
    1e10,
    null,
    '${SECRET}',
    '${MISSING}',
    '$${ESCAPED}',
    '${',
    '/hooks/x',
    '/mcp',
    '/api/x',
    'header:X-Id',
    '/id',
  ),
  fc.string({ maxLength: 30 }),
  fc.integer(),
  anyJson,
  fc.record(
    {
      header: fc.string({ maxLength: 10 }),
      algorithm: fc.constantFrom('sha1', 'sha256', 'sha512', 'md5'),
      encoding: fc.constantFrom('hex', 'base64', 'binary'),
      signed: fc.constantFrom('body', '{timestamp}.{body}', '{header:X}', '{nope}', '{'),
      timestamp_header: fc.string({ maxLength: 8 }),
      secret_encoding: fc.constantFrom('utf8', 'base64', 'hex', 'x'),
    },
    { requiredKeys: [] },
  ),
);

const providerObject = fc.dictionary(
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...PROVIDER_KEYS) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
  ),
  configValue,
  { maxKeys: 6 },
);

const configObject = fc.record(
  {
    providers: fc.oneof(
      fc.dictionary(
        fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,10}$/), fc.string({ maxLength: 10 })),
        providerObject,
        { maxKeys: 4 },
      ),
      anyJson,
    ),
    replay: fc.oneof(
      fc.record({ default_target: configValue, allow: configValue, timeout_ms: configValue }, { requiredKeys: [] }),
      anyJson,
    ),
    retention: fc.oneof(
      fc.record(
        {
          max_age: fc.oneof(fc.constantFrom('30d', '0s', '999999999999999999d', '1x'), fc.string({ maxLength: 8 })),
          max_events: configValue,
          interval_seconds: configValue,
        },
        { requiredKeys: [] },
      ),
      anyJson,
    ),
    server: fc.record(
      { host: configValue, port: configValue, allowed_hosts: configValue, trust_proxy: configValue },
      { requiredKeys: [] },
    ),
    mcp: fc.record({ max_sessions: configValue, session_idle_seconds: configValue }, { requiredKeys: [] }),
    rate_limits: fc.record(
      {
        read: fc.record({ capacity: configValue, refill_per_second: configValue }, { requiredKeys: [] }),
        replay: configValue,
      },
      { requiredKeys: [] },
    ),
    metrics: fc.record({ require_auth: configValue }, { requiredKeys: [] }),
    extra: anyJson,
  },
  { requiredKeys: [] },
);

export interface ConfigCase {
  text: string;
  env: Record<string, string>;
}

export const configSurface: Surface<ConfigCase> = {
  name: 'config',
  arbitrary: () =>
    fc.record({
      text: fc.oneof(
        { weight: 5, arbitrary: configObject.map((c) => JSON.stringify(c)) },
        {
          weight: 2,
          arbitrary: configObject.chain((c) =>
            fc.nat().map((cut) => {
              const t = JSON.stringify(c);
              return t.slice(0, cut % (t.length + 1));
            }),
          ),
        },
        { weight: 2, arbitrary: fc.string({ maxLength: 300 }) },
        { weight: 1, arbitrary: fc.string({ maxLength: 300, unit: 'binary' }) },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            // YAML features that are not plain data: aliases (and an alias bomb), tags, merges,
            // documents, deep nesting, duplicate keys.
            'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n',
            'providers:\n  gh: &p {preset: github, secret: x}\n  gh2: *p\n',
            'providers: !!binary aGVsbG8=\n',
            'providers: !!set {a, b}\n',
            'providers: !!omap [a: 1]\n',
            'providers: !custom {a: 1}\n',
            'providers: !!js/function "function(){}"\n',
            '<<: {providers: {}}\n',
            'providers:\n  gh:\n    <<: {preset: github}\n    secret: s\n',
            '---\nproviders: {}\n---\nproviders: {}\n',
            'providers: {a: 1}\nproviders: {b: 2}\n',
            `providers: ${'['.repeat(3_000)}${']'.repeat(3_000)}\n`,
            `providers: ${'{a: '.repeat(2_000)}1${'}'.repeat(2_000)}\n`,
            'providers: {gh: {preset: github, secret: "${SECRET}"}}\n',
            'providers: {gh: {preset: github, secret: "${NOPE}"}}\n',
            'providers: {gh: {preset: github, secret: "${}"}}\n',
            'providers: {gh: {preset: generic-hmac, hmac: {header: X, signed: "{header:}"}}}\n',
            'providers: {gh: {preset: generic-hmac, hmac: {header: X, secret_encoding: base64}, secret: "***"}}\n',
            'providers: {q: {family: queue, channel: "", mode: streams}}\n',
            'providers: {"__proto__": {preset: open}}\n',
            'providers: {constructor: {preset: open}}\n',
            'replay: {allow: ["10.0.0.0/33", "::/999", "not a host", ""]}\n',
            'retention: {max_age: "99999999999999999999w"}\n',
            '\ufeffproviders: {}\n',
            '\u0000',
            '%YAML 9.9\n---\na: 1\n',
            '? [a, b]\n: c\n',
            'a: 1e999\n',
            'server: {port: 0x1F90}\n',
          ),
        },
      ),
      env: fc.record({
        SECRET: fc.string({ maxLength: 20 }),
        OTHER: fc.oneof(fc.constant('${SECRET}'), fc.string({ maxLength: 20 })),
      }),
    }),
  run: async (_target, _state, input) => {
    try {
      parseConfig(input.text, input.env);
      return 'accepted';
    } catch (err) {
      if (err instanceof ConfigError) return 'ConfigError';
      const name = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      fail(`parseConfig threw ${name.slice(0, 300)} for ${JSON.stringify(input.text.slice(0, 200))}`);
    }
  },
};

/** A short stable label of a case, for failure reports. */
export function caseDigest(value: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(value, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('base64') : v)) ?? '')
    .digest('hex')
    .slice(0, 12);
}
