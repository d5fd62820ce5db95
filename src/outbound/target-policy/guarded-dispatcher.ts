import { Agent, buildConnector, type Dispatcher } from 'undici';
import { failed, refused } from '../delivery-failure.ts';
import { normaliseHost, type IpFamily } from './ip-address.ts';
import {
  assertNoLoop,
  resolveAndCheck,
  systemResolver,
  type CheckedHost,
  type CheckedTarget,
  type Resolver,
} from './resolve-target.ts';
import type { SelfAddress } from './self-loop.ts';
import type { TargetPolicy } from './target-policy.ts';

/**
 * The socket-opening step, in undici's connector shape. It receives `hostname` already replaced
 * by the checked IP and `servername` set to the original host name for TLS.
 */
export type RawConnector = buildConnector.connector;

/** One connection about to be opened, after the policy approved it. */
export interface ConnectAttempt {
  /** The host the request named (normalised). */
  hostname: string;
  /** The checked address the socket is opened to. */
  address: string;
  family: IpFamily;
  port: number;
  protocol: 'http:' | 'https:';
  /** SNI / certificate name for https; undefined for http and for IP-literal hosts. */
  servername: string | undefined;
}

export interface GuardedDispatcherOptions {
  policy: TargetPolicy;
  /** Used per new connection when not pinned. Default: dns.promises.lookup(host, { all: true }). */
  resolver?: Resolver;
  /** Opens the socket. Default: undici's own buildConnector. Tests inject a recorder here. */
  connect?: RawConnector;
  /** Called once per approved connection, just before the socket is opened. */
  onConnect?: (attempt: ConnectAttempt) => void;
  /**
   * The result of checkTarget. When set, the dispatcher serves that origin only, never
   * resolves again, and connects only to `pinned.resolvedIp` (or, if that refuses the connection,
   * the next of `pinned.addresses`), so the audited addresses are the ones used. Without it the dispatcher applies the IP policy per connection but cannot see paths,
   * so it does no loop check.
   */
  pinned?: CheckedTarget;
  /** switchboard's own listening addresses; used with `pinned` for the per-request loop check. */
  selfAddresses?: readonly SelfAddress[];
  connectTimeoutMs?: number;
}

function connectProtocol(protocol: string): 'http:' | 'https:' {
  if (protocol === 'http:' || protocol === 'https:') return protocol;
  throw refused('bad_target', `scheme ${protocol} is not http or https`);
}

function pinnedHost(
  pinned: CheckedTarget,
  policy: TargetPolicy,
  hostname: string,
  protocol: string,
  port: number,
): CheckedHost {
  const host = normaliseHost(hostname);
  const name = host?.kind === 'ip' ? host.address : host?.name;
  if (name !== pinned.hostname || protocol !== pinned.protocol || port !== pinned.port) {
    throw refused('target_not_allowed', `${protocol}//${hostname}:${port} is not the checked target ${pinned.origin}`);
  }
  // Re-applied so a pin built by hand (or against another policy) cannot smuggle an address in.
  return {
    hostname: pinned.hostname,
    addresses: pinned.addresses.map((a) => policy.assertAllowed(pinned.hostname, a.address)),
  };
}

// Errors that say "nothing listens at this address", after which the next checked address of a
// dual-stack name (localhost as ::1 and 127.0.0.1) may still be the consumer.
const TRY_NEXT_ADDRESS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const errorCode = (error: Error): string | undefined =>
  'code' in error && typeof error.code === 'string' ? error.code : undefined;

/**
 * An undici dispatcher whose every connection is: resolve once, check every address, connect to
 * a checked address (the first; the next only if nothing listens there). Because the socket goes
 * to an IP that was checked, a name that answers "allowed" to the check and "metadata" to a
 * second lookup never gets that second lookup.
 *
 * Redirects are not followed: this is a plain Agent with no redirect interceptor, so undici's
 * `request()` hands the 3xx back to the caller, which is what the caller reports. Do not
 * `compose()` interceptors.redirect onto it, and do not use it with `fetch()` unless
 * `redirect: 'manual'`. (A pinned dispatcher would still refuse other origins and loop paths on
 * every dispatch, but the contract is "report the 3xx", not "follow what the policy allows".)
 * It guards only requests it is passed to explicitly (`{ dispatcher }`); the global one is not.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Dispatcher {
  const { pinned } = options;
  const agent = new Agent({ connect: guardedConnector(options) });
  if (!pinned) return agent;
  return agent.compose(pinToTarget(pinned, options.selfAddresses ?? []));
}

/** Connects only to checked addresses: the pinned set, or the policy's verdict on a fresh resolve. */
function guardedConnector(options: GuardedDispatcherOptions): RawConnector {
  const { policy, pinned } = options;
  const resolver = options.resolver ?? systemResolver;
  const raw = options.connect ?? buildConnector({ timeout: options.connectTimeoutMs ?? 10_000 });

  return (opts, callback) => {
    const open = async (): Promise<void> => {
      const protocol = connectProtocol(opts.protocol);
      const port = opts.port ? Number(opts.port) : protocol === 'https:' ? 443 : 80;
      const checked = pinned
        ? pinnedHost(pinned, policy, opts.hostname, protocol, port)
        : await resolveAndCheck(opts.hostname, policy, resolver);
      const servername =
        protocol === 'https:' && normaliseHost(checked.hostname)?.kind === 'name' ? checked.hostname : undefined;

      // Only addresses from the checked set are ever tried, so falling back is not a new decision.
      const attempt = (index: number): void => {
        const target = checked.addresses[index];
        if (!target) {
          callback(failed('could_not_connect', `${checked.hostname} has no approved address`), null);
          return;
        }
        try {
          options.onConnect?.({
            hostname: checked.hostname,
            address: target.address,
            family: target.family,
            port,
            protocol,
            servername,
          });
          raw({ ...opts, hostname: target.address, ...(servername ? { servername } : {}) }, (...result) => {
            const [error] = result;
            const code = error ? errorCode(error) : undefined;
            if (code !== undefined && TRY_NEXT_ADDRESS.has(code) && index + 1 < checked.addresses.length) {
              attempt(index + 1);
              return;
            }
            callback(...result);
          });
        } catch (error) {
          callback(error instanceof Error ? error : new Error(String(error)), null);
        }
      };
      attempt(0);
    };
    open().catch((error: unknown) => {
      callback(error instanceof Error ? error : new Error(String(error)), null);
    });
  };
}

/**
 * The checks a pinned dispatcher makes on every dispatch, synchronously: it serves one origin,
 * and the loop check needs the request path, which the connector never sees.
 */
function pinToTarget(
  pinned: CheckedTarget,
  selfAddresses: readonly SelfAddress[],
): Dispatcher.DispatcherComposeInterceptor {
  // Sync checks at dispatch time: a pinned dispatcher serves one origin, and the loop check needs
  // the request path, which the connector never sees.
  // The origin and path last let through: the checks depend on nothing else (the pin and the self
  // addresses are this dispatcher's own), and a kept dispatcher sends one rule's target each time.
  let passed: { origin: unknown; path: string } | undefined;
  return (dispatch) => (opts, handler) => {
    if (passed !== undefined && passed.origin === opts.origin && passed.path === opts.path) {
      return dispatch(opts, handler);
    }
    const origin = opts.origin === undefined ? undefined : new URL(String(opts.origin)).origin;
    if (origin !== pinned.origin) {
      throw refused(
        'target_not_allowed',
        `${origin ?? 'a request without an origin'} is not the checked target ${pinned.origin}`,
      );
    }
    for (const { address } of pinned.addresses) {
      assertNoLoop(
        { hostname: pinned.hostname, address, port: pinned.port, path: opts.path, display: `${origin}${opts.path}` },
        selfAddresses,
      );
    }
    // Only a string origin is remembered: a URL object could change after it was checked.
    passed = typeof opts.origin === 'string' ? { origin: opts.origin, path: opts.path } : undefined;
    return dispatch(opts, handler);
  };
}
