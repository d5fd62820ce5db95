import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { createMcpServer } from '../../src/mcp/create-mcp-server.ts';
import { RECENT_EVENTS_URI } from '../../src/mcp/recent-events-resource.ts';
import { jsonRpcMessages } from '../fuzz/support/fuzz-http.ts';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

/** A switchboard MCP server on an in-memory transport, spoken to in raw JSON-RPC. */
async function connectRaw(): Promise<{
  server: Server;
  ask: (method: string, params?: unknown) => Promise<Answer>;
  calls: string[];
}> {
  const calls: string[] = [];
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(
    {
      tools: {
        list: [],
        has: () => true,
        call: (name) => {
          calls.push(`tools/call ${name}`);
          return Promise.resolve({ content: [{ type: 'text', text: 'ok' }] });
        },
      },
      resource: {
        store: {
          listWithSummaries: () => {
            calls.push('store.listWithSummaries');
            return Promise.resolve({ events: [] });
          },
        },
        checkReadLimit: () => undefined,
        logger: createLogger({ level: 'silent' }),
      },
      version: '0.0.0-test',
    },
    {
      caller: 'test',
      signal: new AbortController().signal,
      subscribe: (uri) => calls.push(`subscribe ${uri}`),
      unsubscribe: (uri) => calls.push(`unsubscribe ${uri}`),
    },
  );
  await server.connect(serverSide);
  const waiting = new Map<unknown, (answer: Answer) => void>();
  client.onmessage = (message) => {
    const answer = message as Answer;
    waiting.get(answer.id)?.(answer);
  };
  await client.start();
  let nextId = 1;
  const ask = (method: string, params?: unknown): Promise<Answer> => {
    const id = nextId++;
    const answered = new Promise<Answer>((resolve) => waiting.set(id, resolve));
    void client.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) } as JSONRPCMessage);
    return answered;
  };
  return { server, ask, calls };
}

describe('request params that break the request schema', () => {
  let raw: Awaited<ReturnType<typeof connectRaw>>;
  beforeEach(async () => {
    raw = await connectRaw();
  });
  afterEach(() => raw.server.close());

  const cases: Array<[method: string, params: unknown, message: RegExp]> = [
    ['tools/call', { name: 5 }, /^Invalid params for tools\/call: name: expected string, received number$/],
    [
      'tools/call',
      { name: 'list_providers', arguments: 'limit=1' },
      /^Invalid params for tools\/call: arguments: expected record, received string$/,
    ],
    [
      'tools/call',
      { name: 'list_providers', arguments: [1, 2] },
      /^Invalid params for tools\/call: arguments: expected record, received array$/,
    ],
    ['tools/call', undefined, /^Invalid params for tools\/call: params: expected object/],
    ['tools/call', {}, /^Invalid params for tools\/call: name: expected string, received undefined$/],
    ['tools/call', { name: 'list_providers', task: { ttl: 1000 } }, /^Invalid params for tools\/call: task: /],
    ['tools/list', { cursor: 7 }, /^Invalid params for tools\/list: cursor: expected string/],
    ['resources/list', { cursor: {} }, /^Invalid params for resources\/list: cursor: expected string/],
    [
      'resources/templates/list',
      { cursor: [] },
      /^Invalid params for resources\/templates\/list: cursor: expected string/,
    ],
    ['resources/read', { uri: 5 }, /^Invalid params for resources\/read: uri: expected string, received number$/],
    ['resources/read', undefined, /^Invalid params for resources\/read: params: expected object/],
    [
      'resources/subscribe',
      { uri: null },
      /^Invalid params for resources\/subscribe: uri: expected string, received null$/,
    ],
    [
      'resources/unsubscribe',
      { uri: ['x'] },
      /^Invalid params for resources\/unsubscribe: uri: expected string, received array$/,
    ],
    [
      'initialize',
      { protocolVersion: 2025, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      /^Invalid params for initialize: protocolVersion: expected string/,
    ],
  ];

  it.each(cases)(
    '%s %j is answered -32602 invalid params, naming the field, and reaches no handler',
    async (method, params, message) => {
      const answer = await raw.ask(method, params);
      expect(answer.error?.code, JSON.stringify(answer)).toBe(ErrorCode.InvalidParams);
      expect(answer.error?.message).toMatch(message);
      expect(raw.calls).toEqual([]);
    },
  );

  it('lists at most three issues and says how many more there were', async () => {
    const answer = await raw.ask('initialize', { protocolVersion: 1, capabilities: 2, clientInfo: {} });
    expect(answer.error?.code).toBe(ErrorCode.InvalidParams);
    expect(answer.error?.message).toBe(
      'Invalid params for initialize: protocolVersion: expected string, received number; capabilities: expected object, received number; ' +
        'clientInfo.name: expected string, received undefined; and 1 more',
    );
  });

  it('valid params still reach the handlers, and unknown methods are still method-not-found', async () => {
    expect((await raw.ask('tools/call', { name: 'list_providers', arguments: {} })).error).toBeUndefined();
    expect((await raw.ask('resources/read', { uri: RECENT_EVENTS_URI })).error).toBeUndefined();
    expect((await raw.ask('resources/subscribe', { uri: RECENT_EVENTS_URI })).error).toBeUndefined();
    expect((await raw.ask('tools/list', { cursor: 'x' })).error).toBeUndefined();
    expect((await raw.ask('ping')).error).toBeUndefined();
    expect(raw.calls).toEqual([
      'tools/call list_providers',
      'store.listWithSummaries',
      `subscribe ${RECENT_EVENTS_URI}`,
    ]);
    expect((await raw.ask('prompts/get', { name: 5 })).error?.code).toBe(ErrorCode.MethodNotFound);
  });
});

describe('over HTTP, inside a session', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startMcpHarness();
  });
  afterAll(() => h?.close());

  it('tools/call with a numeric name and resources/read with a numeric uri are answered -32602 on the request stream', async () => {
    const auth = { authorization: `Bearer ${h.token}` };
    const init = await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: JSON.stringify(INITIALIZE) });
    const sessionId = String(init.headers['mcp-session-id']);
    const inSession = { ...MCP_HEADERS, ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
    await rawRequest(h.port, {
      headers: inSession,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });

    const response = await rawRequest(h.port, {
      headers: inSession,
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 5, arguments: {} } },
        { jsonrpc: '2.0', id: 'read', method: 'resources/read', params: { uri: 5 } },
        { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
      ]),
    });
    expect(response.status).toBe(200);
    const answers = jsonRpcMessages({
      headers: { 'content-type': String(response.headers['content-type']) },
      text: response.body,
    }) as Answer[];
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect(byId.get('call')?.error).toEqual({
      code: -32602,
      message: 'Invalid params for tools/call: name: expected string, received number',
    });
    expect(byId.get('read')?.error).toEqual({
      code: -32602,
      message: 'Invalid params for resources/read: uri: expected string, received number',
    });
    expect(byId.get('list')?.result).toMatchObject({ tools: expect.any(Array) });
  });
});
