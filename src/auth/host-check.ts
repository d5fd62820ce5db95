/**
 * DNS-rebinding protection for /mcp and /api: a browser tricked into sending requests to
 * 127.0.0.1 by a hostile page still says `Host: evil.example` (and `Origin: http://evil.example`),
 * so any request naming a host switchboard was not told about is refused with 403 before it is
 * authenticated or read.
 *
 * Allowed hosts, always with the port the connection arrived on:
 * - bound to loopback (127.x, ::1, localhost): localhost, 127.0.0.1, [::1] and the bind address;
 * - bound to a wildcard (0.0.0.0, ::): the same loopback names plus the local address the
 *   connection arrived at, so http://<this machine's IP>:<port> works from the LAN. A DNS name for
 *   the machine is not guessed: list it in server.allowed_hosts;
 * - bound to any other address or name: that address or name;
 * plus server.allowed_hosts, where `name` allows any port and `name:port` only that port.
 * An Origin, when present, must name an allowed host too (its port defaulting by scheme).
 */
import { isIP } from 'node:net';
import type { Context, Middleware } from 'koa';
import { AppError } from '../errors/app-error.ts';

export interface HostCheckOptions {
  /** The address switchboard binds (server.host or --host). */
  bindHost: string;
  /** server.allowed_hosts. */
  allowedHosts?: readonly string[];
}

interface Authority {
  host: string;
  port: number | undefined;
}

interface Connection {
  localAddress: string | undefined;
  localPort: number | undefined;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/**
 * Lower-cased host (IPv6 in brackets, IPv4-mapped IPv6 unwrapped, no trailing dot) and port, or undefined when unparsable.
 * @internal outside src/, only tests or benches use it
 */
export function parseAuthority(authority: string): Authority | undefined {
  const text = authority.trim().toLowerCase();
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/.exec(text);
  const rawHost = match?.[1];
  if (match === null || rawHost === undefined) return undefined;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && port > 65535) return undefined;
  return { host: canonicalHost(rawHost), port };
}

function canonicalHost(host: string): string {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped?.[1] !== undefined) return mapped[1];
  if (isIP(bare) === 6) return `[${bare}]`;
  return bare.replace(/\.$/, '');
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function isWildcardHost(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '[::]';
}

/** @internal outside src/, only tests or benches use it */
export interface HostMatcher {
  /** Whether an authority (a Host header, or an Origin's host with its port) may reach this connection. */
  allows(authority: Authority, connection: Connection): boolean;
}

/** @internal outside src/, only tests or benches use it */
export function createHostMatcher(options: HostCheckOptions): HostMatcher {
  const bind = canonicalHost(options.bindHost.trim().toLowerCase());
  const extraAnyPort = new Set<string>();
  const extraExact = new Set<string>();
  for (const entry of options.allowedHosts ?? []) {
    const parsed = parseAuthority(entry);
    if (parsed === undefined)
      throw new Error(`server.allowed_hosts: ${JSON.stringify(entry)} is not a host name or host:port`);
    if (parsed.port === undefined) extraAnyPort.add(parsed.host);
    else extraExact.add(`${parsed.host}:${parsed.port}`);
  }
  const boundNames = new Set<string>(isLoopbackHost(bind) || isWildcardHost(bind) ? [...LOOPBACK_NAMES, bind] : [bind]);

  return {
    allows(authority, connection) {
      if (extraAnyPort.has(authority.host)) return true;
      const port = authority.port ?? 80;
      if (extraExact.has(`${authority.host}:${port}`)) return true;
      if (connection.localPort === undefined || port !== connection.localPort) return false;
      if (boundNames.has(authority.host)) return true;
      if (isWildcardHost(bind) && connection.localAddress !== undefined) {
        return authority.host === canonicalHost(connection.localAddress.toLowerCase());
      }
      return false;
    },
  };
}

/** The Origin's authority with its port made explicit, or undefined when it is not an http(s) origin. */
function originAuthority(origin: string): Authority | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const parsed = parseAuthority(url.host);
  if (parsed === undefined) return undefined;
  return { host: parsed.host, port: parsed.port ?? (url.protocol === 'https:' ? 443 : 80) };
}

type HostVerdict = { allowed: true } | { allowed: false; reason: string };

function checkHostAndOrigin(matcher: HostMatcher, ctx: Context): HostVerdict {
  const connection: Connection = { localAddress: ctx.req.socket.localAddress, localPort: ctx.req.socket.localPort };
  const hostHeader = ctx.req.headers.host;
  const host = hostHeader === undefined ? undefined : parseAuthority(hostHeader);
  if (host === undefined || !matcher.allows(host, connection)) {
    return { allowed: false, reason: 'Host header not allowed; add the host to server.allowed_hosts if it is yours' };
  }
  const originHeader = ctx.req.headers.origin;
  if (originHeader !== undefined) {
    const origin = originAuthority(originHeader);
    if (origin === undefined || !matcher.allows(origin, connection)) {
      return { allowed: false, reason: 'Origin not allowed; add its host to server.allowed_hosts if it is yours' };
    }
  }
  return { allowed: true };
}

/** Koa middleware: throws forbidden (403) for a foreign Host or Origin, else next(). */
export function createHostCheck(options: HostCheckOptions): Middleware {
  const matcher = createHostMatcher(options);
  return async (ctx, next) => {
    const verdict = checkHostAndOrigin(matcher, ctx);
    if (!verdict.allowed) throw new AppError('forbidden', verdict.reason, { headers: { 'Cache-Control': 'no-store' } });
    await next();
  };
}
