/**
 * The one way a stored event leaves switchboard: replay (on demand) and forwarding (every new
 * event) both send through deliverEvent, so the target policy, connect-time pinning, the loop and
 * sender checks, the header rules and the credentials rule cannot differ between them.
 */
import type { Logger } from '../log/logger.ts';
import type { Dispatcher } from 'undici';
import { HTTP_STATUS_LIMITS } from '../../generated/constants.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import type { StoredEvent } from '../store/events/event-store.ts';
import { withOriginalQuery } from '../shared/url-query.ts';
import { originalQueryOf, type CredentialKind } from './credentials.ts';
import { DeliveryFailure, failed } from './delivery-failure.ts';
import { redactCredentials } from './redact-credentials.ts';
import { assertNotSender } from './refuse-sender.ts';
import { sendRequest, type SendOutcome } from './send-request.ts';
import { checkTarget, type CheckedTarget, type Resolver } from './target-policy/resolve-target.ts';
import { createGuardedDispatcher, type ConnectAttempt, type RawConnector } from './target-policy/guarded-dispatcher.ts';
import { createTargetPolicy, type TargetPolicy } from './target-policy/target-policy.ts';
import { observePolicy } from './target-policy/observe-policy.ts';
import { KeptConnections, requestTargetOf, type RequestTarget } from './kept-connections.ts';
import { createDeliveryHeaders } from './delivery-headers.ts';
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
interface DeliveryTrace {
  stage: DeliveryStage;
  targetUrl: string | null;
  resolvedIp: string | null;
  credentials: CredentialKind | undefined;
  /** The names (lower-case) of the headers the credentials set; never their values. */
  credentialHeaders?: readonly string[];
}

/** @internal outside src/, only tests or benches use it */
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
   * one per rule). The target's check is kept only while its inputs hold (KeptVerdict: a name is
   * asked again per delivery or per TTL, and a changed answer is checked afresh); the connection
   * is reused only while that check lands on exactly the same checked addresses, and every new
   * connection is checked again at connect time. Without a key, one connection per delivery.
   */
  keepAliveKey?: string;
  /** Keep the whole answer, up to this many bytes, with its headers (a reply passed back to a provider). */
  keepAnswerBytes?: number;
}

interface DeliverOutcome extends SendOutcome {
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

export function createOutbound(options: OutboundOptions): Outbound {
  const now = options.now ?? Date.now;
  // Built at startup so a bad outbound.allow entry stops the server, not a delivery.
  const policy = options.policy ?? createTargetPolicy({ allow: options.allow });
  const providers = new Map<string, ProviderConfig>(options.providers.map((p) => [p.name, p]));
  // The route table ingest serves, custom routes included: a delivery into any of them re-ingests.
  const webhookRoutes = options.providers.flatMap((p) => (p.family === 'webhook' ? [p.route] : []));

  const headersFor = createDeliveryHeaders({ now, logger: options.logger });

  /** switchboard's own addresses as the loop check sees them: with every webhook route served. */
  const withRoutes = (selfAddresses: readonly SelfAddress[]): SelfAddress[] =>
    selfAddresses.map((self) => ({ ...self, routes: [...(self.routes ?? []), ...webhookRoutes] }));

  /**
   * The full check, stage by stage, for a delivery whose connection is not kept (replay): the
   * target is resolved and checked, and its refusal records the address it was about.
   */
  async function checkOnce(request: DeliverRequest): Promise<{ target: CheckedTarget; dispatcher: Dispatcher }> {
    const { trace } = request;
    const observed = observePolicy(policy);
    const selfAddresses = withRoutes(options.selfAddresses());
    const target = await checkTarget(parseTarget(request.url.href), {
      policy: observed.policy,
      selfAddresses,
      ...(options.resolver ? { resolver: options.resolver } : {}),
    }).catch((error: unknown) => {
      if (trace) {
        trace.resolvedIp = observed.refused() ?? observed.allowed() ?? null;
        // A "not-an-ip" refusal remembers whatever the resolver returned; only real addresses are kept.
        if (trace.resolvedIp !== null && normaliseIp(trace.resolvedIp) === undefined) trace.resolvedIp = null;
      }
      throw error;
    });
    const dispatcher = guardedDispatcher(target, selfAddresses, request.timeoutMs, (connection) => {
      if (trace) trace.resolvedIp = connection.address;
    });
    return { target, dispatcher };
  }

  function guardedDispatcher(
    target: CheckedTarget,
    selfAddresses: readonly SelfAddress[],
    connectTimeoutMs: number,
    onConnect?: (connection: ConnectAttempt) => void,
  ): Dispatcher {
    return createGuardedDispatcher({
      // The policy itself, not a delivery's observer: a kept dispatcher outlives the delivery.
      policy,
      pinned: target,
      selfAddresses,
      connectTimeoutMs,
      ...(options.resolver ? { resolver: options.resolver } : {}),
      ...(options.connect ? { connect: options.connect } : {}),
      onConnect: (connection) => {
        onConnect?.(connection);
        options.onConnect?.(connection);
      },
    });
  }

  const kept = new KeptConnections({
    policy,
    selfAddresses: options.selfAddresses,
    withRoutes,
    pinnedDispatcher: (target, selfAddresses, connectTimeoutMs) =>
      guardedDispatcher(target, selfAddresses, connectTimeoutMs),
    ...(options.resolver ? { resolver: options.resolver } : {}),
    now,
  });

  async function send(request: DeliverRequest): Promise<{ ok: true } & DeliverOutcome> {
    const { event, trace } = request;
    const provider = providers.get(event.provider);
    if (trace) {
      trace.stage = 'resolve';
      trace.targetUrl = request.url.href;
    }
    // A traced delivery (replay) is checked in full, so its record names what was refused.
    const key = trace === undefined ? request.keepAliveKey : undefined;
    let target: CheckedTarget;
    let requestTarget: RequestTarget;
    let dispatcher: Dispatcher;
    if (key === undefined) {
      ({ target, dispatcher } = await checkOnce(request));
      requestTarget = requestTargetOf(target);
    } else {
      const verdict = kept.heldVerdict(key, request.url) ?? (await kept.verdict(key, request.url));
      ({ target, requestTarget } = verdict);
      dispatcher = kept.dispatcher(key, verdict, request.timeoutMs);
    }
    if (trace) {
      trace.targetUrl = target.url;
      trace.resolvedIp = target.resolvedIp;
      trace.stage = 'send';
    }
    try {
      assertNotSender(target, event);
      // Signed last thing before sending, so a timestamped signature is as fresh as it can be.
      const { headers, body, needles } = headersFor(request, provider);
      const sent = await sendRequest({
        target: requestTarget,
        dispatcher,
        body,
        headers,
        timeoutMs: request.timeoutMs,
        ...(request.signal ? { signal: request.signal } : {}),
        ...(options.responseBodyLimitBytes === undefined
          ? {}
          : { responseBodyLimitBytes: options.responseBodyLimitBytes }),
        ...(request.keepAnswerBytes === undefined ? {} : { keepAnswerBytes: request.keepAnswerBytes }),
      });
      if (sent.status < HTTP_STATUS_LIMITS.minimum || sent.status > HTTP_STATUS_LIMITS.maximum) {
        // Something answered, but not with HTTP as the contract knows it.
        throw failed('no_answer', `the target answered with status ${sent.status}, which is not an HTTP status`);
      }
      // A consumer that echoes its request must not hand the credentials to whoever reads the excerpt.
      return { ok: true, ...sent, excerpt: redactCredentials(sent.excerpt, needles), target };
    } catch (error) {
      // A failed connection is not kept, nor is its verdict: the next attempt checks and connects afresh.
      if (key !== undefined) kept.drop(key);
      throw error;
    } finally {
      if (key === undefined) dispatcher.destroy().catch(() => undefined);
    }
  }

  function deliver(request: DeliverRequest): Promise<DeliverResult> {
    // A preset that signs its URL: the delivery carries the query the event arrived with.
    const original = originalQueryOf(providers.get(request.event.provider), request.event);
    const carried = original === undefined ? request : { ...request, url: withOriginalQuery(request.url, original) };
    return send(carried).then(undefined, (error: unknown) => {
      if (error instanceof DeliveryFailure) return { ok: false, failure: error };
      throw error;
    });
  }

  return { deliver, policy, webhookRoutes, close: () => kept.close() };
}
