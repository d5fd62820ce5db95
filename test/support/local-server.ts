/**
 * HTTP servers a test stands up on loopback, port 0: the app under test (listenLocal) and the
 * consumers a replay or a trigger is sent to (startConsumer), plus a port nobody listens on.
 * No vitest import: bench/ uses these too.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { randomInt } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo } from 'node:net';

/** The one address tests listen on and send to: nothing in a test leaves this machine. */
export const LOOPBACK = '127.0.0.1';

export interface Listening {
  server: Server;
  host: string;
  port: number;
  /** http://host:port */
  origin: string;
  /** Drops open connections (keep-alive, streams) and stops listening. */
  close(): Promise<void>;
}

export async function listenLocal(handler: RequestListener, host = LOOPBACK, port = 0): Promise<Listening> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    host,
    port: bound,
    origin: `http://${host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Name, value, name, value… exactly as they arrived. */
  rawHeaders: string[];
  body: Buffer;
}

export type ConsumerHandler = (req: RecordedRequest, res: ServerResponse) => void;

export interface Consumer {
  host: string;
  port: number;
  /** Where to send: http://host:port/webhook by default. */
  url(path?: string): string;
  /** Every request, in arrival order, body bytes included. */
  requests: RecordedRequest[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  /** Replaces how the consumer answers (default: 200 "ok"). */
  handle(handler: ConsumerHandler): void;
  close(): Promise<void>;
}

/** Answers every request with this status and no body. */
export const answerWith =
  (status: number): ConsumerHandler =>
  (_req, res) => {
    res.statusCode = status;
    res.end();
  };

const answerOk: ConsumerHandler = (_req, res) => {
  res.end('ok');
};

/** A webhook consumer on a loopback address that records every request it gets (on `port`, or a free one). */
export async function startConsumer(host = LOOPBACK, handler: ConsumerHandler = answerOk, port = 0): Promise<Consumer> {
  let current = handler;
  const listening = await listenLocal(
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body: Buffer.concat(chunks),
        };
        consumer.requests.push(recorded);
        current(recorded, res);
      });
    },
    host,
    port,
  );
  const consumer: Consumer = {
    host,
    port: listening.port,
    url: (path = '/webhook') => `${listening.origin}${path}`,
    requests: [],
    connections: 0,
    handle: (next) => {
      current = next;
    },
    close: () => listening.close(),
  };
  listening.server.on('connection', () => {
    consumer.connections += 1;
  });
  return consumer;
}

/**
 * A port that was just listened on and closed again: connecting to it is refused. It is drawn
 * below Linux's ephemeral range (32768–60999), where every listen(0) of the test files running
 * beside this one gets its port: one from inside it was once handed to another file's server
 * before the test that held it connected, and that server answered instead of a refusal.
 */
export async function closedPort(host = LOOPBACK): Promise<number> {
  for (;;) {
    const server = createNetServer();
    const port = 20_000 + randomInt(10_000);
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    if (bound) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return port;
    }
  }
}
