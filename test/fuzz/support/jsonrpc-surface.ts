/**
 * Random and malformed JSON-RPC POSTed to /mcp: mostly well-framed requests for the methods the
 * SDK knows (so the server, not only the transport's framing check, is exercised), then batches,
 * truncated and binary bodies, odd content types, Accept values and protocol versions.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { anyJson, TOOL_NAMES } from './arbitraries.ts';
import { checkAnswer, closeSession, MCP_ACCEPT, openMcpSession, PROTOCOL_VERSION, refusal, send } from './fuzz-http.ts';
import type { Surface } from './surface.ts';

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
        name: fc.oneof(fc.constantFrom(...TOOL_NAMES), fc.string({ maxLength: 30 })),
        arguments: anyJson,
        uri: fc.oneof(fc.constant('switchboard://events/recent'), fc.string({ maxLength: 60 })),
        protocolVersion: fc.oneof(fc.constantFrom(...SUPPORTED_PROTOCOL_VERSIONS), fc.string({ maxLength: 12 })),
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
