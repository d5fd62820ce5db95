/** Plain-HTTP helpers for API tests: requests with a bearer token, webhook senders and an SSE reader. */
import { randomUUID } from 'node:crypto';
import { request as streamRequest, type IncomingHttpHeaders } from 'node:http';
import { httpRequest, type HttpResponse } from '../support/http-client.ts';
import type { WebhookProviderConfig } from '../../src/config/resolve-config.ts';
import { prepareTrigger } from '../../src/trigger/trigger-sample.ts';
import { createParser } from 'eventsource-parser';
import type { ApiTestServer } from './api-test-server.ts';
import { CI_TOKEN } from './api-test-server.ts';

export type RawResponse = HttpResponse;

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Bearer token; null sends none. Default: the server's token. */
  token?: string | null;
}

/** A request to the server under test with its bearer token (or another, or none). */
export function call(
  server: Pick<ApiTestServer, 'port' | 'token'>,
  path: string,
  options: RequestOptions = {},
): Promise<RawResponse> {
  const token = options.token === undefined ? server.token : options.token;
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (token !== null) headers['authorization'] ??= `Bearer ${token}`;
  return httpRequest(server.port, { method: options.method ?? 'GET', path, headers, body: options.body });
}

export async function getJson<T>(server: ApiTestServer, path: string): Promise<T> {
  const res = await call(server, path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.body}`);
  return res.json() as T;
}

function provider(server: ApiTestServer, name: string): WebhookProviderConfig {
  const p = server.providers.find((x) => x.name === name);
  if (!p || p.family !== 'webhook') throw new Error(`no webhook provider ${name}`);
  return p;
}

/** A GitHub delivery signed with the configured secret, built by the `switchboard trigger` logic. */
export async function sendSignedGithub(server: ApiTestServer, sample?: string): Promise<{ id: string; body: Buffer }> {
  const prepared = prepareTrigger(provider(server, 'github'), sample, Date.now());
  const res = await call(server, '/hooks/github', {
    method: 'POST',
    headers: prepared.headers,
    body: prepared.body,
    token: null,
  });
  if (res.status !== 200) throw new Error(`github delivery: ${res.status} ${res.body}`);
  return { id: (res.json() as { id: string }).id, body: prepared.body };
}

/** A GitHub delivery with a wrong signature: stored unverified because record_rejected is on. */
export async function sendBadlySignedGithub(server: ApiTestServer): Promise<string> {
  const prepared = prepareTrigger(provider(server, 'github'), undefined, Date.now());
  const headers = { ...prepared.headers, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };
  const res = await call(server, '/hooks/github', { method: 'POST', headers, body: prepared.body, token: null });
  const listed = await getJson<{ events: { id: string }[] }>(
    server,
    '/api/events?provider=github&verified=false&limit=1',
  );
  const id = listed.events[0]?.id;
  if (id === undefined) throw new Error(`rejected delivery was not recorded (status ${res.status})`);
  return id;
}

/**
 * A GitHub delivery of any payload, signed with the configured secret (or, forged, with another),
 * to /hooks/github with an optional query string. Answers the stored id and the status.
 */
export async function sendGithubPayload(
  server: ApiTestServer,
  event: string,
  payload: unknown,
  options: { query?: string; forged?: boolean } = {},
): Promise<{ status: number; id: string }> {
  const github = provider(server, 'github');
  const body = Buffer.from(JSON.stringify(payload));
  const secret = options.forged === true ? 'not-the-secret' : (github.secrets[0] ?? '');
  const signed = github.preset.sign?.({ body, secret, nowMs: Date.now() }) ?? {};
  const res = await call(server, `/hooks/github${options.query ?? ''}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      ...signed,
    },
    body,
    token: null,
  });
  if (res.status === 200) return { status: res.status, id: (res.json() as { id: string }).id };
  // A rejected delivery answers no id: it is the newest unverified github event (record_rejected).
  const listed = await getJson<{ events: { id: string }[] }>(
    server,
    '/api/events?provider=github&verified=false&limit=1',
  );
  return { status: res.status, id: listed.events[0]?.id ?? '' };
}

export async function sendOpen(
  server: ApiTestServer,
  body: Buffer | string,
  contentType = 'application/json',
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await call(server, '/hooks/hooks', {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
    token: null,
  });
  if (res.status !== 200) throw new Error(`open delivery: ${res.status} ${res.body}`);
  return (res.json() as { id: string }).id;
}

export async function sendToken(server: ApiTestServer, payload: unknown): Promise<string> {
  const res = await call(server, '/hooks/ci', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-webhook-token': CI_TOKEN },
    body: JSON.stringify(payload),
    token: null,
  });
  if (res.status !== 200) throw new Error(`token delivery: ${res.status} ${res.body}`);
  return (res.json() as { id: string }).id;
}

/** One dispatched message; event is 'message' and id '' when the server sent none. */
interface SseMessage {
  event: string;
  data: string;
  id: string;
}

export interface SseConnection {
  status: number;
  headers: IncomingHttpHeaders;
  messages: SseMessage[];
  comments: number;
  retryMs: number | undefined;
  /** Resolves once `count` messages (in total) have arrived. */
  waitForMessages(count: number, timeoutMs?: number): Promise<SseMessage[]>;
  waitForComments(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
  /** Drops the TCP connection without a goodbye, as a crashed or unplugged client does. */
  destroySocket(): void;
}

/** Reads /api/stream with the same parser the UI and switchboard listen use. */
export function openStream(
  server: ApiTestServer,
  options: { lastEventId?: string; token?: string | null; headers?: Record<string, string> } = {},
): Promise<SseConnection> {
  const token = options.token === undefined ? server.token : options.token;
  const headers: Record<string, string> = { accept: 'text/event-stream', ...(options.headers ?? {}) };
  if (token !== null) headers['authorization'] = `Bearer ${token}`;
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  return new Promise((resolve, reject) => {
    const req = streamRequest({ host: '127.0.0.1', port: server.port, path: '/api/stream', headers }, (res) => {
      const conn: SseConnection = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages: [],
        comments: 0,
        retryMs: undefined,
        waitForMessages: (count, timeoutMs = 5000) =>
          waitFor(() => conn.messages.length >= count, timeoutMs, `${count} messages`).then(() =>
            conn.messages.slice(0, count),
          ),
        waitForComments: (count, timeoutMs = 5000) =>
          waitFor(() => conn.comments >= count, timeoutMs, `${count} comments`),
        ended: new Promise((done) => res.on('close', () => done())),
        close: () => req.destroy(),
        destroySocket: () => res.socket.resetAndDestroy(),
      };
      const parser = createParser({
        onEvent: (m) => conn.messages.push({ event: m.event ?? 'message', data: m.data, id: m.id ?? '' }),
        onComment: () => (conn.comments += 1),
        onRetry: (ms) => (conn.retryMs = ms),
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', () => undefined);
      resolve(conn);
    });
    req.on('error', (err) => {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(err);
    });
    req.end();
  });
}

export async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
