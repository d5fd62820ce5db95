/**
 * The HTTP side every surface shares: one request through the target's agent, the check that an
 * answer breaks no rule (no 5xx but the allowed 503, no `internal` anywhere), the stored-row
 * comparison for refused input, and an MCP session to send tool calls in.
 */
import { createParser } from 'eventsource-parser';
import { request } from 'undici';
import { fail, type SurfaceState } from './surface.ts';
import type { FuzzTarget } from './target.ts';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

export async function send(
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
export function checkAnswer(what: string, answer: Answer, options: { allow503?: RegExp } = {}): void {
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

export function sameSnapshot(
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
export function refusal(answer: Answer): string {
  const [message] = jsonRpcMessages(answer) as Array<{ error?: { message?: unknown } }>;
  const text = typeof message?.error?.message === 'string' ? message.error.message : '';
  return text.split(/[:;(]/)[0]?.slice(0, 48) ?? '';
}

export const MCP_ACCEPT = 'application/json, text/event-stream';
export const PROTOCOL_VERSION = '2025-06-18';

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
export function postInSession(target: FuzzTarget, sessionId: string, message: unknown): ReturnType<typeof send> {
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

export async function closeSession(target: FuzzTarget, sessionId: string): Promise<void> {
  await send(target, 'DELETE', '/mcp', { authorization: `Bearer ${target.token}`, 'mcp-session-id': sessionId }).catch(
    () => undefined,
  );
}

/** Twelve stored events of two types and one page cursor, for the surfaces that read. */
export async function seedEvents(target: FuzzTarget, state: SurfaceState): Promise<void> {
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
