/**
 * Small interop fixes of issue 17: portable nullable schemas on the wire, JSON-RPC errors whose
 * message a client prints once with the envelope in data, and client hang-ups that do not fill the
 * log with warnings.
 */
import { connect } from 'node:net';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateErrorEnvelope } from '../../generated/validators.js';
import { INITIALIZE, MCP_HEADERS, rawRequest } from './support/raw-http.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';
import { deliverOpen } from './support/webhooks.ts';

let h: Harness;
beforeAll(async () => {
  h = await startMcpHarness({ config: { rate_limits: { read: { capacity: 40, refill_per_second: 0.01 } } } });
});
afterAll(() => h?.close());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  const outcome = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(McpError);
  return outcome as McpError;
}

/** Paths of every `type` written as a list. */
function typeLists(node: unknown, path: string, out: string[]): string[] {
  if (Array.isArray(node)) node.forEach((n, i) => typeLists(n, `${path}/${i}`, out));
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type' && Array.isArray(value)) out.push(path);
      typeLists(value, `${path}/${key}`, out);
    }
  }
  return out;
}

describe('portable schemas', () => {
  it('Nullable fields are written as anyOf on the wire: no tool schema in tools/list has a type list, and nulls still validate', async () => {
    const client = await h.connect();
    const { tools } = await client.listTools();
    expect(typeLists(tools, 'tools', [])).toEqual([]);
    const get = tools.find((t) => t.name === 'get_webhook_event');
    expect((get?.outputSchema?.properties as Record<string, unknown>).external_id).toEqual({
      anyOf: [{ type: 'string' }, { type: 'null' }],
    });
    // An open delivery has no external id: null passes the client's own outputSchema validation.
    const { id } = await deliverOpen(h.origin, '{"type":"ping"}');
    const detail = await client.callTool({ name: 'get_webhook_event', arguments: { id } });
    expect(detail.isError).toBeUndefined();
    expect(detail.structuredContent).toMatchObject({ external_id: null });
  });
});

describe('JSON-RPC errors', () => {
  it('Unknown resource error carries the envelope once: one MCP error -32002 prefix in the message, the not_found envelope in data', async () => {
    const client = await h.connect();
    for (const attempt of [
      () => client.readResource({ uri: 'switchboard://events/all' }),
      () => client.subscribeResource({ uri: 'switchboard://events/all' }),
    ]) {
      const error = await rejection(attempt());
      expect(error.code).toBe(-32002);
      expect(error.message).toBe(
        'MCP error -32002: resource not found: switchboard://events/all; the one resource is switchboard://events/recent',
      );
      expect(validateErrorEnvelope(error.data)).toBe(true);
      expect(error.data).toEqual({
        error: {
          code: 'not_found',
          message: 'resource not found: switchboard://events/all; the one resource is switchboard://events/recent',
        },
      });
    }

    // On the wire the message has no prefix at all: the client adds its one.
    const auth = { authorization: `Bearer ${h.token}` };
    const init = await rawRequest(h.port, { headers: { ...MCP_HEADERS, ...auth }, body: JSON.stringify(INITIALIZE) });
    const session = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    const read = await rawRequest(h.port, {
      headers: { ...MCP_HEADERS, ...auth, ...session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'resources/read', params: { uri: 'x:y' } }),
    });
    expect(read.body).toContain('"message":"resource not found: x:y;');
    expect(read.body).not.toContain('MCP error');
  });

  it('sends an unknown tool and a rate-limited read with their message once, and the envelope in data', async () => {
    const client = await h.connect();
    const unknown = await rejection(client.callTool({ name: 'drop_all_events', arguments: {} }));
    expect(unknown.code).toBe(-32602);
    expect(unknown.message).toBe('MCP error -32602: Unknown tool: drop_all_events');

    let limited: McpError | undefined;
    for (let i = 0; i < 60 && limited === undefined; i += 1) {
      limited = await client.readResource({ uri: 'switchboard://events/recent' }).then(
        () => undefined,
        (err: unknown) => (err instanceof McpError ? err : undefined),
      );
    }
    expect(limited?.code).toBe(-32029);
    expect(limited?.message).toMatch(/^MCP error -32029: [^M]/);
    expect(validateErrorEnvelope(limited?.data)).toBe(true);
    expect(limited?.data).toMatchObject({ error: { code: 'rate_limited', retry_after: expect.any(Number) } });
  });
});

/** Sends text on a fresh socket, then after `ms` hangs up: a reset (RST) or a plain close. */
function hangUp(text: string, ms: number, reset: boolean): Promise<string> {
  return new Promise((resolve) => {
    let received = '';
    const socket = connect(h.port, '127.0.0.1', () => socket.write(text));
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    setTimeout(() => {
      if (reset) socket.resetAndDestroy();
      else socket.destroy();
      resolve(received);
    }, ms);
  });
}

describe('client hang-ups', () => {
  it('Client disconnects are logged at debug: resets mid-stream and mid-response leave no warning and no stack', async () => {
    const { token: token } = await h.tokens.create('hang-up');
    const post = (body: string, extra = ''): string =>
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n${extra}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const logsBefore = h.logs.length;
    const answer = await hangUp(post(JSON.stringify(INITIALIZE)), 300, false);
    const sessionId = /mcp-session-id: (\S+)/i.exec(answer)?.[1] ?? '';
    expect(sessionId).not.toBe('');
    const session = `Mcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-06-18\r\n`;
    await hangUp(post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session), 100, false);
    const stream = `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n${session}\r\n`;
    // What a health check does: open the stream, then go away, abruptly or not.
    await hangUp(stream, 200, true);
    await hangUp(stream, 200, false);
    await hangUp(post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), session), 1, true);
    const call = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'list_webhook_events', arguments: {} },
    };
    await hangUp(post(JSON.stringify(call), session), 2, true);
    await hangUp(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\n${session}Content-Length: 500\r\n\r\n{"jsonrpc"`,
      100,
      true,
    );
    await sleep(500);

    const lines = h.logs.slice(logsBefore);
    const loud = lines.filter((line) => (line.level as number) >= 40);
    expect(loud, JSON.stringify(loud)).toEqual([]);
    const goneAway = lines.filter((line) => line.msg === 'client went away');
    expect(goneAway.length).toBeGreaterThan(0);
    for (const line of goneAway) {
      expect(line.level).toBe(20);
      expect(JSON.stringify(line)).not.toMatch(/"stack"|\\n {4}at /);
    }
  });
});
