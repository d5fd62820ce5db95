import { networkInterfaces } from 'node:os';
import { normaliseHost, normaliseIp } from './ip-address.ts';
import { HOOKS_PREFIX, isUnder, MCP_PATH } from '../../shared/route-prefixes.ts';

/** One address switchboard itself listens on (`server.host` / `server.port`). */
export interface SelfAddress {
  host: string;
  port: number;
  /**
   * Webhook routes served there besides the /hooks/ and /mcp trees: every provider's `route`,
   * custom ones included, straight from the route table the ingest surface is built from.
   */
  routes?: readonly string[];
}

export interface LoopCandidate {
  /** Host as the target named it (name or IP literal). */
  hostname: string;
  /** The address the connection would go to (already checked by the policy). */
  address: string;
  port: number;
  /** URL pathname (a query string, if present, is ignored). */
  path: string;
}

const isLoopback = (address: string): boolean => address === '::1' || address.startsWith('127.');
const isUnspecified = (address: string): boolean => address === '0.0.0.0' || address === '::';

function localInterfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) {
      const ip = normaliseIp(info.address);
      if (ip) out.add(ip.address);
    }
  }
  return out;
}

/**
 * Koa routes case-insensitively and some layers decode %-escapes before routing, so compare the
 * path the way the most lenient router would see it: decoded, lower-cased, slashes collapsed.
 */
function routerView(path: string): string {
  let view = path.split('?')[0] ?? '';
  for (let i = 0; i < 3; i += 1) {
    try {
      const decoded = decodeURIComponent(view);
      if (decoded === view) break;
      view = decoded;
    } catch {
      break;
    }
  }
  return view
    .toLowerCase()
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/');
}

/** Trailing slashes dropped ("/" stays "/"): a router that ignores them must not slip past the check. */
const withoutTrailingSlash = (view: string): string => view.replace(/(?<=.)\/+$/, '');

function isLoopPronePath(path: string, routes: readonly string[] = []): boolean {
  const view = routerView(path);
  if (isUnder(view, MCP_PATH) || isUnder(view, HOOKS_PREFIX)) return true;
  const exact = withoutTrailingSlash(view);
  return routes.some((route) => withoutTrailingSlash(routerView(route)) === exact);
}

function isSelf(candidate: LoopCandidate, self: SelfAddress): boolean {
  if (self.port !== candidate.port) return false;
  // A connection to 0.0.0.0 or :: goes to this machine itself, so it reaches whatever listens on
  // the port, whichever address switchboard is bound to.
  if (isUnspecified(candidate.address)) return true;
  const selfHost = normaliseHost(self.host);
  if (!selfHost) return false;

  if (selfHost.kind === 'name') {
    if (selfHost.name === 'localhost') return isLoopback(candidate.address);
    const target = normaliseHost(candidate.hostname);
    return target?.kind === 'name' && target.name === selfHost.name;
  }
  if (selfHost.address === candidate.address) return true;
  // Every loopback alias reaches a loopback listener on Linux, so they all count as "self".
  if (isLoopback(selfHost.address) && isLoopback(candidate.address)) return true;
  if (isUnspecified(selfHost.address)) {
    return (
      isLoopback(candidate.address) ||
      isUnspecified(candidate.address) ||
      localInterfaceAddresses().has(candidate.address)
    );
  }
  return false;
}

/**
 * True when delivering to this target would post back into switchboard's own ingest or MCP
 * endpoint: a delivery that re-ingests itself, or an agent driving switchboard through itself.
 */
export function wouldLoopBack(candidate: LoopCandidate, selfAddresses: readonly SelfAddress[]): boolean {
  return selfAddresses.some((self) => isLoopPronePath(candidate.path, self.routes) && isSelf(candidate, self));
}
