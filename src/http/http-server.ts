/**
 * The HTTP server switchboard listens on: Node's server with the timeouts that bound slow
 * clients, and a graceful drain. It knows nothing of what it serves; the product
 * (server/start-switchboard.ts) and every test harness hand it the app's request handler.
 */
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAddressInUse, PortInUseError } from './port-in-use.ts';

export interface ServerTimeouts {
  /** Whole request head (request line and headers) must arrive within this. */
  headersTimeoutMs: number;
  /** Whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /**
   * How often Node checks the two timeouts above. Node's default is 30 s, which would let a
   * slowloris client hold a socket for up to 40 s despite a 10 s headersTimeout.
   */
  checkIntervalMs: number;
}

/**
 * Bounds that keep slow or idle clients (slowloris) from holding sockets for long.
 * @internal outside src/, only tests or benches use it
 */
export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

export interface HttpServerOptions {
  host: string;
  /** 0 asks the system for a free port. */
  port: number;
  /** Overrides SERVER_TIMEOUTS (tests shorten them to watch slow clients being cut off). */
  timeouts?: Partial<ServerTimeouts>;
}

interface DrainOptions {
  /** How long in-flight requests may take to be answered before every connection is cut. */
  timeoutMs: number;
  /**
   * Runs once no new connection is accepted: ends what never ends on its own (event streams,
   * MCP sessions), so the drain can finish.
   */
  onDraining?: () => Promise<void>;
}

export interface HttpServer {
  server: Server;
  host: string;
  /** The real port, when 0 was asked for. */
  port: number;
  /** http://host:port, with a wildcard host written as its loopback. */
  url: string;
  /** Stop accepting, let in-flight requests finish (bounded), then close. */
  drain(options: DrainOptions): Promise<void>;
}

/** The URL host for a bound address: a wildcard is reached through loopback, IPv6 in brackets. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

async function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    // Taken between start-up's check (ensurePortFree) and now: said the same way as the check says it.
    const fail = (err: Error): void =>
      reject(isAddressInUse(err) ? new PortInUseError(host, port, { cause: err }) : err);
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  return address;
}

export async function listenHttp(handler: RequestListener, options: HttpServerOptions): Promise<HttpServer> {
  const timeouts: ServerTimeouts = { ...SERVER_TIMEOUTS, ...options.timeouts };
  const server = createServer(
    {
      requestTimeout: timeouts.requestTimeoutMs,
      headersTimeout: timeouts.headersTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
    },
    handler,
  );
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  const address = await listen(server, options.host, options.port);

  let draining = false;
  const unanswered = new Set<ServerResponse>();
  // During the drain every answer says Connection: close (those already in progress too), so
  // keep-alive clients go elsewhere for their next request instead of holding this instance open.
  server.prependListener('request', (_req, res) => {
    if (draining) {
      res.setHeader('Connection', 'close');
      return;
    }
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  });

  const drain = async ({ timeoutMs, onDraining }: DrainOptions): Promise<void> => {
    draining = true;
    for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // server.close() closes only the connections idle at that moment: one whose request ends
    // during the drain would otherwise stay open until keepAliveTimeout and delay the exit.
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    try {
      await onDraining?.();
      await closed;
    } finally {
      clearTimeout(timer);
      clearInterval(sweep);
    }
  };

  return {
    server,
    host: options.host,
    port: address.port,
    url: `http://${urlHost(options.host)}:${address.port}`,
    drain,
  };
}
