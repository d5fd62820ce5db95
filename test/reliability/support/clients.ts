/**
 * Clients the reliability tests use against switchboard children: the official MCP SDK Client,
 * a Server-Sent Events reader for /api/stream, and a poll helper. Nothing here is mocked: each
 * talks HTTP to a real child process on 127.0.0.1.
 */
import { request, type IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createParser } from 'eventsource-parser';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export async function connectMcp(mcpUrl: string, token: string, name = 'reliability-test'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    // The tests decide when to reconnect; the SDK's own retries would blur what they observe.
    reconnectionOptions: {
      maxReconnectionDelay: 1_000,
      initialReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 0,
    },
  });
  await client.connect(transport);
  return client;
}

export type ToolOutcome =
  { ok: true; value: Record<string, unknown> } | { ok: false; error: { code: string; message: string } };

/** Calls a tool and reads either its structured result or its error envelope. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const result = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
    content?: Array<{ type: string; text?: string }>;
  };
  const text = result.content?.[0]?.text ?? '';
  if (result.isError === true) {
    const envelope = JSON.parse(text) as { error: { code: string; message: string } };
    return { ok: false, error: envelope.error };
  }
  return { ok: true, value: result.structuredContent ?? (JSON.parse(text) as Record<string, unknown>) };
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  options: { timeoutMs: number; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`,
      );
    }
    await delay(options.intervalMs ?? 100);
  }
}

interface SseMessage {
  event: string;
  id: string | undefined;
  data: string;
}

export interface SseReader {
  status: number;
  messages: SseMessage[];
  /** Resolves with the first message matching, already received or still to come. */
  waitForMessage(match: (m: SseMessage) => boolean, timeoutMs: number): Promise<SseMessage>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/** GET /api/stream with a bearer token, parsed as text/event-stream. */
export function openEventStream(baseUrl: string, token: string): Promise<SseReader> {
  const url = new URL('/api/stream', baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'GET',
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      },
      (res: IncomingMessage) => {
        const messages: SseMessage[] = [];
        const waiters: Array<{ match: (m: SseMessage) => boolean; resolve: (m: SseMessage) => void }> = [];
        const parser = createParser({
          onEvent: (parsed) => {
            const message: SseMessage = { event: parsed.event ?? 'message', id: parsed.id, data: parsed.data };
            messages.push(message);
            for (const waiter of [...waiters]) {
              if (waiter.match(message)) {
                waiters.splice(waiters.indexOf(waiter), 1);
                waiter.resolve(message);
              }
            }
          },
        });
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => parser.feed(chunk));
        const ended = new Promise<void>((done) => {
          res.once('end', () => done());
          res.once('close', () => done());
          res.once('error', () => done());
        });
        resolve({
          status: res.statusCode ?? 0,
          messages,
          ended,
          waitForMessage: (match, timeoutMs) => {
            const found = messages.find(match);
            if (found !== undefined) return Promise.resolve(found);
            return new Promise<SseMessage>((done, fail) => {
              const waiter = {
                match,
                resolve: (m: SseMessage) => {
                  clearTimeout(timer);
                  done(m);
                },
              };
              const timer = setTimeout(() => {
                waiters.splice(waiters.indexOf(waiter), 1);
                fail(new Error(`no matching SSE message within ${timeoutMs} ms (got ${messages.length})`));
              }, timeoutMs);
              waiters.push(waiter);
            });
          },
          close: () => {
            req.destroy();
            res.destroy();
          },
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
