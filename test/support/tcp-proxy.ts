/**
 * A TCP proxy on 127.0.0.1 in front of PostgreSQL or Redis, so a test can take the real server
 * away from a switchboard child: down() drops every proxied connection and stops listening (new
 * connections are refused, as with a stopped server); up() listens again on the same port.
 * hold() keeps what the server sends in the proxy until release(), so a test decides when, say,
 * a LISTEN connection hears a notification.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { LOOPBACK } from './local-server.ts';

export interface ControlledProxy {
  readonly port: number;
  readonly isUp: boolean;
  /** The URL with host and port replaced by the proxy's. */
  via(url: string): string;
  /** Connections accepted so far (a client that reconnects shows up here). */
  readonly accepted: number;
  /** From now on, bytes from the server wait in the proxy (in order) until release(). */
  hold(): void;
  /** Hands over what hold() kept, and passes bytes through again. */
  release(): void;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/** The well-known ports a URL without one means. */
const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379 };

/** A proxy in front of the server a postgres:// or redis:// URL names; children reach it at `proxy.via(url)`. */
export function proxyInFrontOf(url: string): Promise<ControlledProxy> {
  const target = new URL(url);
  const port = target.port === '' ? DEFAULT_PORTS[target.protocol] : Number(target.port);
  if (port === undefined) throw new Error(`no default port for ${target.protocol} URLs; give one`);
  return startControlledProxy(target.hostname, port);
}

export async function startControlledProxy(targetHost: string, targetPort: number): Promise<ControlledProxy> {
  const sockets = new Set<Socket>();
  // Each connection's server-to-client direction, which hold() unplugs.
  const replies = new Map<Socket, Socket>();
  let held = false;
  let server: Server | undefined;
  let port = 0;
  let accepted = 0;

  const onConnection = (client: Socket): void => {
    accepted += 1;
    const upstream = connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      replies.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    replies.set(upstream, client);
    if (held) upstream.pause();
    else upstream.pipe(client);
  };

  const up = async (): Promise<void> => {
    if (server !== undefined) return;
    // The port was ours a moment ago; on a busy machine the kernel may take a beat to free it.
    for (let attempt = 0; ; attempt += 1) {
      const next = createServer(onConnection);
      next.listen(port, LOOPBACK);
      try {
        await Promise.race([
          once(next, 'listening'),
          once(next, 'error').then(([err]) => {
            throw err;
          }),
        ]);
      } catch (err) {
        if (attempt >= 20) throw err;
        await delay(100);
        continue;
      }
      port = (next.address() as AddressInfo).port;
      server = next;
      return;
    }
  };

  const down = async (): Promise<void> => {
    const current = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    if (current !== undefined) await new Promise<void>((resolve) => current.close(() => resolve()));
  };

  await up();
  return {
    get port() {
      return port;
    },
    get isUp() {
      return server !== undefined;
    },
    get accepted() {
      return accepted;
    },
    via(url: string) {
      const parsed = new URL(url);
      parsed.hostname = LOOPBACK;
      parsed.port = String(port);
      return parsed.toString();
    },
    hold() {
      if (held) return;
      held = true;
      // Unpiped and paused, a socket keeps what arrives in its buffer (and TCP's) until piped again.
      for (const [upstream, client] of replies) {
        upstream.unpipe(client);
        upstream.pause();
      }
    },
    release() {
      if (!held) return;
      held = false;
      for (const [upstream, client] of replies) upstream.pipe(client);
    },
    down,
    up,
    close: down,
  };
}
