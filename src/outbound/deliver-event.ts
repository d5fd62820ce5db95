/**
 * The one way a stored event leaves switchboard: replay (on demand) and forwarding (every new
 * event) both send through deliverEvent, so the target policy, connect-time pinning, the loop and
 * sender checks, the header rules and the credentials rule cannot differ between them.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { HTTP_STATUS_LIMITS } from '../../generated/constants.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import type { StoredEvent } from '../store/event-store.ts';
import { withOriginalQuery } from '../shared/delivery-query.ts';
import {
  deliveryCredentials,
  originalQueryOf,
  secretHeadersOf,
  type CredentialKind,
  type DeliveryCredentials,
} from './credentials.ts';
import { DeliveryFailure, failed, refused } from './delivery-failure.ts';
import { credentialNeedles, redactCredentials } from './redact-credentials.ts';
import {
  assembleDeliveryHeaders,
  deliveryHeaderSelection,
  selectStoredHeaders,
  type OutgoingHeaders,
} from './outgoing-headers.ts';
import { assertNotSender } from './refuse-sender.ts';
import { sendRequest, type SendOutcome } from './send-request.ts';
import { checkTarget, type CheckedTarget, type Resolver } from './target-policy/resolve-target.ts';
import { createGuardedDispatcher, type ConnectAttempt, type RawConnector } from './target-policy/guarded-dispatcher.ts';
import { createTargetPolicy, type TargetPolicy } from './target-policy/target-policy.ts';
import { normaliseIp } from './target-policy/ip-address.ts';
import { parseTarget } from './target-policy/target-url.ts';
import type { SelfAddress } from './target-policy/self-loop.ts';

export interface OutboundOptions {
  providers: readonly ProviderConfig[];
  /** Host names, IPs and CIDRs reachable besides loopback (outbound.allow). */
  allow: readonly string[];
  /** switchboard's own listening addresses, asked per delivery because they are known only after listen. */
  selfAddresses: () => readonly SelfAddress[];
  logger: Logger;
  /** Overrides the policy built from `allow` (tests pin loopback to one address with it). */
  policy?: TargetPolicy;
  /** Test injection: DNS answers. Default: the system resolver. */
  resolver?: Resolver;
  /** Test injection: opens the socket to the checked address. Default: undici's connector. */
  connect?: RawConnector;
  /** Called for every approved connection, just before its socket is opened. */
  onConnect?: (attempt: ConnectAttempt) => void;
  /** Milliseconds since the epoch, for signature timestamps. Default Date.now. */
  now?: () => number;
  /** How much of a consumer's answer is read before the stream is dropped. Default 64 KiB. */
  responseBodyLimitBytes?: number;
}

/**
 * How far an attempt got: the event was checked, then the target URL parsed, then its host
 * resolved and checked against the policy, then the request sent. Where a refusal or failure
 * happened says what it was about.
 */
export type DeliveryStage = 'event' | 'target' | 'resolve' | 'send';

/** How far one delivery got, filled in as it goes: replay's audit trail records it. */
export interface DeliveryTrace {
  stage: DeliveryStage;
  targetUrl: string | null;
  resolvedIp: string | null;
  credentials: CredentialKind | undefined;
  /** The names (lower-case) of the headers the credentials set; never their values. */
  credentialHeaders?: readonly string[];
}

export interface DeliverRequest {
  event: StoredEvent;
  /** Parsed and syntax-checked (parseTarget); resolved and policy-checked here. */
  url: URL;
  timeoutMs: number;
  /** Send no signature and no token, whatever the provider could attach. */
  unsigned: boolean;
  /** Headers added last (X-Switchboard-Delivery, X-Switchboard-Attempt); they win over copied ones. */
  extraHeaders?: Readonly<Record<string, string>>;
  /** Ends the attempt early (shutdown). */
  signal?: AbortSignal;
  trace?: DeliveryTrace;
  /**
   * Keep the pinned connection open for the next delivery with the same key (forwarding passes
   * one per rule). The target is still resolved and checked on every delivery; the connection is
   * reused only while that check lands on exactly the same checked addresses, and every new
   * connection is checked again at connect time. Without a key, one connection per delivery.
   */
  keepAliveKey?: string;
}

export interface DeliverOutcome extends SendOutcome {
  target: CheckedTarget;
}

/**
 * What became of one delivery: any HTTP answer is an outcome (ok, whatever its status); a refusal
 * or a transport failure is a structured failure each caller words its own way.
 */
export type DeliverResult = ({ ok: true } & DeliverOutcome) | { ok: false; failure: DeliveryFailure };

export interface Outbound {
  /**
   * Resolves and checks the target, pins the connection to the checked address, refuses a loop
   * into switchboard or a return to the event's sender, then POSTs the stored bytes with the
   * allowed stored headers and, for an event that passed its check, fresh credentials. Refusals
   * and transport failures come back as `{ ok: false, failure }`; anything else it throws is a bug.
   */
  deliver(request: DeliverRequest): Promise<DeliverResult>;
  /** The policy every delivery is checked against (config load checks forward targets with it). */
  policy: TargetPolicy;
  /** The webhook routes switchboard serves, for the loop check. */
  webhookRoutes: readonly string[];
  /** Closes the connections kept for keepAliveKey deliveries. */
  close(): Promise<void>;
}

/** A pinned dispatcher kept open for one keepAliveKey, and the checked pin it serves. */
interface KeptConnection {
  pin: string;
  dispatcher: Dispatcher;
}

// Over 80 lines: one closure over the policy, dispatcher and timings every delivery uses; its
// send() is the one delivery path, stage by stage.
export function createOutbound(options: OutboundOptions): Outbound {
  const now = options.now ?? Date.now;
  // Built at startup so a bad outbound.allow entry stops the server, not a delivery.
  const policy = options.policy ?? createTargetPolicy({ allow: options.allow });
  const providers = new Map<string, ProviderConfig>(options.providers.map((p) => [p.name, p]));
  // The route table ingest serves, custom routes included: a delivery into any of them re-ingests.
  const webhookRoutes = options.providers.flatMap((p) => (p.family === 'webhook' ? [p.route] : []));

  /** The headers to send, and what an excerpt of the answer must not show (redactCredentials). */
  function headersFor(
    request: DeliverRequest,
    provider: ProviderConfig | undefined,
    url: URL,
  ): { headers: OutgoingHeaders; needles: string[] } {
    const { event } = request;
    const credentials: DeliveryCredentials = request.unsigned
      ? { kind: 'none', reason: 'unsigned', headers: {} }
      : deliveryCredentials(provider, {
          body: event.payload,
          storedHeaders: event.headers,
          nowMs: now(),
          arrival: event,
          // A preset that signs the URL signs the query this delivery carries (shared/delivery-query.ts).
          query: provider?.family === 'webhook' && provider.publicUrl !== undefined ? url.search.slice(1) : undefined,
        });
    if (request.trace) {
      request.trace.credentials = credentials.kind;
      request.trace.credentialHeaders = Object.keys(credentials.headers).map((name) => name.toLowerCase());
    }
    if (
      credentials.kind === 'none' &&
      !request.unsigned &&
      provider?.family === 'webhook' &&
      provider.trustMode !== 'open'
    ) {
      options.logger.debug(
        { eventId: event.id, provider: event.provider, reason: credentials.reason },
        'event sent without credentials',
      );
    }
    const selection = deliveryHeaderSelection(provider, secretHeadersOf(provider));
    const headers = assembleDeliveryHeaders({
      eventId: event.id,
      contentType: event.contentType,
      copied: selectStoredHeaders(event.headers, selection),
      credentials: credentials.headers,
    });
    for (const [name, value] of Object.entries(request.extraHeaders ?? {})) headers[name.toLowerCase()] = value;
    const secrets = provider?.family === 'webhook' ? provider.secrets : [];
    return { headers, needles: credentialNeedles(secrets, Object.values(credentials.headers)) };
  }

  // Over 80 lines: one delivery in its order (check, resolve, connect, send, read), each stage
  // recorded for the failure it may end in.
  async function send(request: DeliverRequest): Promise<DeliverOutcome> {
    const { event, trace } = request;
    const provider = providers.get(event.provider);
    const original = originalQueryOf(provider, event);
    const url = original === undefined ? request.url : withOriginalQuery(request.url, original);
    if (trace) {
      trace.stage = 'resolve';
      trace.targetUrl = url.href;
    }
    const observed = observePolicy(policy);
    const selfAddresses = options.selfAddresses().map((self) => ({
      ...self,
      routes: [...(self.routes ?? []), ...webhookRoutes],
    }));
    const checkOptions = {
      policy: observed.policy,
      selfAddresses,
      connectTimeoutMs: request.timeoutMs,
      ...(options.resolver ? { resolver: options.resolver } : {}),
      ...(options.connect ? { connect: options.connect } : {}),
    };
    // Resolved and checked on every delivery, a kept connection included: a name that now points
    // somewhere the policy refuses is refused here, before any socket is used.
    const target = await checkTarget(parseTarget(url.href), checkOptions).catch((error: unknown) => {
      if (trace) {
        trace.resolvedIp = observed.refused() ?? observed.allowed() ?? null;
        // A "not-an-ip" refusal remembers whatever the resolver returned; only real addresses are kept.
        if (trace.resolvedIp !== null && normaliseIp(trace.resolvedIp) === undefined) trace.resolvedIp = null;
      }
      throw error;
    });
    const key = request.keepAliveKey;
    // The pin a kept connection may serve: same origin, same checked addresses, same self addresses.
    const pin = JSON.stringify([target.origin, target.addresses, selfAddresses]);
    let kept = key === undefined ? undefined : keptConnections.get(key);
    if (kept !== undefined && kept.pin !== pin) {
      dropKept(key);
      kept = undefined;
    }
    const dispatcher =
      kept?.dispatcher ??
      createGuardedDispatcher({
        ...checkOptions,
        // The policy itself, not this delivery's observer: a kept dispatcher outlives the delivery.
        policy,
        pinned: target,
        onConnect: (connection) => {
          if (trace && key === undefined) trace.resolvedIp = connection.address;
          options.onConnect?.(connection);
        },
      });
    if (key !== undefined && kept === undefined) keptConnections.set(key, { pin, dispatcher });
    if (trace) {
      trace.targetUrl = target.url;
      trace.resolvedIp = target.resolvedIp;
      trace.stage = 'send';
    }
    try {
      assertNotSender(target, event);
      // Signed last thing before sending, so a timestamped signature is as fresh as it can be.
      const { headers, needles } = headersFor(request, provider, url);
      const sent = await sendRequest({
        url: target.url,
        dispatcher,
        body: event.payload,
        headers,
        timeoutMs: request.timeoutMs,
        ...(request.signal ? { signal: request.signal } : {}),
        ...(options.responseBodyLimitBytes === undefined
          ? {}
          : { responseBodyLimitBytes: options.responseBodyLimitBytes }),
      });
      // A consumer that echoes its request must not hand the credentials to whoever reads the excerpt.
      const outcome = { ...sent, excerpt: redactCredentials(sent.excerpt, needles) };
      if (outcome.status < HTTP_STATUS_LIMITS.minimum || outcome.status > HTTP_STATUS_LIMITS.maximum) {
        // Something answered, but not with HTTP as the contract knows it.
        throw failed('no_answer', `the target answered with status ${outcome.status}, which is not an HTTP status`);
      }
      return { ...outcome, target };
    } catch (error) {
      // A failed connection is not kept: the next attempt starts on a fresh one.
      if (key !== undefined) dropKept(key);
      throw error;
    } finally {
      if (key === undefined) dispatcher.destroy().catch(() => undefined);
    }
  }

  async function deliver(request: DeliverRequest): Promise<DeliverResult> {
    try {
      return { ok: true, ...(await send(request)) };
    } catch (error) {
      if (error instanceof DeliveryFailure) return { ok: false, failure: error };
      throw error;
    }
  }

  const keptConnections = new Map<string, KeptConnection>();
  function dropKept(key: string | undefined): void {
    const kept = key === undefined ? undefined : keptConnections.get(key);
    if (key === undefined || kept === undefined) return;
    keptConnections.delete(key);
    // Closes once requests already on it have finished; another delivery of the rule may be one.
    kept.dispatcher.close().catch(() => undefined);
  }

  async function close(): Promise<void> {
    const all = [...keptConnections.values()];
    keptConnections.clear();
    await Promise.all(all.map((kept) => kept.dispatcher.destroy().catch(() => undefined)));
  }

  return { deliver, policy, webhookRoutes, close };
}

/**
 * Wraps the policy to remember what it decided, so a refused attempt's record can name the
 * address that was refused: the policy's error carries it only inside a sentence.
 */
function observePolicy(inner: TargetPolicy): {
  policy: TargetPolicy;
  refused: () => string | undefined;
  allowed: () => string | undefined;
} {
  let refusedAddress: string | undefined;
  let allowed: string | undefined;
  const policy: TargetPolicy = {
    check(hostname, address) {
      const verdict = inner.check(hostname, address);
      if (verdict.allowed) allowed ??= verdict.address;
      else refusedAddress ??= verdict.address;
      return verdict;
    },
    assertAllowed(hostname, address) {
      const verdict = policy.check(hostname, address);
      if (!verdict.allowed) throw refused('target_not_allowed', verdict.detail);
      return { address: verdict.address, family: verdict.family };
    },
  };
  return { policy, refused: () => refusedAddress, allowed: () => allowed };
}
