import { lookup } from 'node:dns/promises';
import { failed, refused } from '../delivery-failure.ts';
import { normaliseHost, type IpAddress, type IpFamily } from './ip-address.ts';
import { wouldLoopBack, type SelfAddress } from './self-loop.ts';
import type { TargetPolicy } from './target-policy.ts';

export interface ResolvedAddress {
  address: string;
  family: number;
  /**
   * Seconds the answer may be used for (a DNS record's TTL), when the resolver knows it. The
   * system resolver (getaddrinfo) does not say, so its answers are asked for again each delivery.
   */
  ttl?: number;
}

/** Turns a host name into every address it currently stands for. Injectable so tests never hit DNS. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface CheckedHost {
  /** The host as the target named it, normalised (lower case, no brackets, no trailing dot). */
  hostname: string;
  /**
   * Every address the name stood for, each approved by the policy, in resolver order and without
   * duplicates. Never empty. Connections go to these and nowhere else.
   */
  addresses: readonly IpAddress[];
}

/**
 * Resolves once and checks every candidate. One refused candidate refuses the target: a name
 * that answers with both a loopback and a metadata address is an attack, not a fallback list.
 * IP literals never reach the resolver.
 */
export async function resolveAndCheck(
  hostname: string,
  policy: TargetPolicy,
  resolver: Resolver,
): Promise<CheckedHost> {
  const host = normaliseHost(hostname);
  if (!host) throw refused('bad_target', `host "${hostname}" is not a valid host name or IP address`);

  if (host.kind === 'ip') {
    return { hostname: host.address, addresses: [policy.assertAllowed(host.address, host.address)] };
  }

  let candidates: readonly ResolvedAddress[];
  try {
    candidates = await resolver(host.name);
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : 'lookup failed';
    throw failed('could_not_resolve', `${host.name} could not be resolved (${code})`, error);
  }

  const addresses: IpAddress[] = [];
  for (const candidate of candidates) {
    const ok = policy.assertAllowed(host.name, candidate.address);
    if (!addresses.some((a) => a.address === ok.address)) addresses.push(ok);
  }
  if (addresses.length === 0) {
    throw failed('could_not_resolve', `${host.name} could not be resolved (no addresses)`);
  }
  return { hostname: host.name, addresses };
}

const defaultPort = (url: URL): number => (url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80);

/** A target as checked: what replay's audit trail records, and what a pinned dispatcher connects to. */
export interface CheckedTarget {
  /** The full target URL as it will be requested. */
  url: string;
  origin: string;
  protocol: 'http:' | 'https:';
  /** Normalised host name (or the IP literal). */
  hostname: string;
  port: number;
  /**
   * The first approved address: the one a pinned dispatcher connects to unless it refuses the
   * connection (then the next of `addresses` is tried; onConnect reports each attempt).
   */
  resolvedIp: string;
  family: IpFamily;
  /** All approved addresses of the host, `resolvedIp` first. The pinned dispatcher uses no other. */
  addresses: readonly IpAddress[];
}

export interface CheckTargetOptions {
  policy: TargetPolicy;
  resolver?: Resolver;
  /** switchboard's own listening addresses, for the loop check. */
  selfAddresses?: readonly SelfAddress[];
}

export function assertNoLoop(
  target: { hostname: string; address: string; port: number; path: string; display: string },
  selfAddresses: readonly SelfAddress[],
): void {
  if (wouldLoopBack(target, selfAddresses)) {
    throw refused(
      'target_not_allowed',
      `${target.display} would loop back into switchboard (its own /mcp endpoint or a webhook route it serves)`,
    );
  }
}

/**
 * The up-front check: resolve once, apply the policy to every address, refuse loops. The result
 * is both the audit record and the pin for createGuardedDispatcher, so the address logged is the
 * address connected to.
 */
export async function checkTarget(url: URL, options: CheckTargetOptions): Promise<CheckedTarget> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refused('bad_target', `scheme ${url.protocol} is not http or https`);
  }
  const checked = await resolveAndCheck(url.hostname, options.policy, options.resolver ?? systemResolver);
  const port = defaultPort(url);
  for (const { address } of checked.addresses) {
    assertNoLoop(
      { hostname: checked.hostname, address, port, path: url.pathname, display: `${url.host}${url.pathname}` },
      options.selfAddresses ?? [],
    );
  }
  const [first] = checked.addresses;
  if (!first) throw failed('could_not_resolve', `${checked.hostname} could not be resolved (no addresses)`);
  return {
    url: url.href,
    origin: url.origin,
    protocol: url.protocol,
    hostname: checked.hostname,
    port,
    resolvedIp: first.address,
    family: first.family,
    addresses: checked.addresses,
  };
}
