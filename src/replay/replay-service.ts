import type { Logger } from 'pino';
import type { ReplayResult } from '../../generated/types.ts';
import { validateReplayResult } from '../../generated/validators.js';
import type { ProviderConfig } from '../config/resolve-config.ts';
import { AppError, invalidArgument, notFound } from '../errors/app-error.ts';
import type { EventStore, ReplayAttemptRepository, StoredEvent } from '../store/index.ts';
import { assertNotSender } from './refuse-sender.ts';
import { createReplayAuditor, errorCodeOf, errorReasonOf, type AttemptState } from './replay-audit.ts';
import {
  failedArrivalMessage,
  replayCredentials,
  secretHeadersOf,
  type ReplayCredentials,
} from './replay-credentials.ts';
import {
  assembleReplayHeaders,
  replayHeaderSelection,
  selectStoredHeaders,
  type OutgoingHeaders,
} from './replay-headers.ts';
import type { ReplayRequest, ReplayService } from './replay-types.ts';
import { sendReplay } from './send-replay.ts';
import {
  createTargetPolicy,
  normaliseIp,
  parseReplayTarget,
  prepareReplayDelivery,
  type ConnectAttempt,
  type RawConnector,
  type Resolver,
  type SelfAddress,
  type TargetPolicy,
} from './target-policy/index.ts';

export interface ReplayServiceDeps {
  store: Pick<EventStore, 'get'>;
  attempts: Pick<ReplayAttemptRepository, 'record'>;
  providers: readonly ProviderConfig[];
  /** ResolvedConfig.replay. */
  replay: { defaultTarget: string | undefined; allow: readonly string[]; timeoutMs: number };
  /** switchboard's own listening addresses, asked per replay because they are known only after listen. */
  selfAddresses: () => readonly SelfAddress[];
  /** Throws AppError rate_limited when the caller's replay bucket is empty. */
  checkRateLimit?: (caller: string) => void;
  logger: Logger;
  /** Overrides the policy built from `replay.allow` (tests pin loopback to one address with it). */
  policy?: TargetPolicy;
  /** Test injection: DNS answers. Default: the system resolver. */
  resolver?: Resolver;
  /** Test injection: opens the socket to the checked address. Default: undici's connector. */
  connect?: RawConnector;
  /** Called for every approved connection, just before its socket is opened. */
  onConnect?: (attempt: ConnectAttempt) => void;
  /** Milliseconds since the epoch: signature timestamps and started_at. Default Date.now. */
  now?: () => number;
  /** How much of a consumer's answer is read before the stream is dropped. Default 64 KiB. */
  responseBodyLimitBytes?: number;
}

/**
 * The one replay path, shared by MCP and the HTTP API. Checks run cheapest and least revealing
 * first: rate limit, event exists, event passed its check on arrival (or the caller asked for an
 * unsigned replay), target chosen and parsed (no network), target resolved and
 * checked against the policy (DNS only) and against the event's sender, then one POST pinned to
 * the checked address. Every attempt, whatever its outcome, ends in the audit table and the log.
 */
export function createReplayService(deps: ReplayServiceDeps): ReplayService {
  const now = deps.now ?? Date.now;
  // Built at startup so a bad replay.allow entry or preset option stops the server, not a replay.
  const policy = deps.policy ?? createTargetPolicy({ allow: deps.replay.allow });
  const providers = new Map<string, ProviderConfig>(deps.providers.map((p) => [p.name, p]));
  const auditor = createReplayAuditor(deps.attempts, deps.logger);
  // The route table ingest serves, custom routes included: a replay into any of them re-ingests.
  const webhookRoutes = deps.providers.flatMap((p) => (p.family === 'webhook' ? [p.route] : []));

  function headersFor(event: StoredEvent, provider: ProviderConfig | undefined, state: AttemptState): OutgoingHeaders {
    const credentials: ReplayCredentials = state.unsigned
      ? { kind: 'none', reason: 'unsigned: true', headers: {} }
      : replayCredentials(provider, {
          body: event.payload,
          storedHeaders: event.headers,
          nowMs: now(),
          arrival: event,
        });
    state.credentials = credentials.kind;
    if (
      credentials.kind === 'none' &&
      !state.unsigned &&
      provider?.family === 'webhook' &&
      provider.trustMode !== 'open'
    ) {
      deps.logger.debug(
        { eventId: event.id, provider: event.provider, reason: credentials.reason },
        'replay sent without credentials',
      );
    }
    const selection = replayHeaderSelection(provider, secretHeadersOf(provider));
    return assembleReplayHeaders({
      eventId: event.id,
      contentType: event.contentType,
      copied: selectStoredHeaders(event.headers, selection),
      credentials: credentials.headers,
    });
  }

  async function attempt(request: ReplayRequest, state: AttemptState): Promise<ReplayResult> {
    deps.checkRateLimit?.(request.caller);

    const event = await deps.store.get(request.eventId).catch((error: unknown) => {
      // A malformed id can have no row; say so to the auditor before the error goes up.
      if (error instanceof AppError && error.code === 'invalid_argument') state.eventExists = false;
      throw error;
    });
    if (event === null) {
      state.eventExists = false;
      throw notFound(`no event with id ${request.eventId}`);
    }
    state.eventExists = true;
    state.eventId = event.id;
    state.provider = event.provider;
    // Before the target is even parsed: this refusal is about the event, whatever the target.
    const failed = state.unsigned ? undefined : failedArrivalMessage(event);
    if (failed !== undefined) throw invalidArgument(failed);
    const provider = providers.get(event.provider);
    if (provider === undefined) {
      deps.logger.warn(
        { eventId: event.id, provider: event.provider },
        'replaying an event whose provider is no longer configured',
      );
    }

    // No network before this line; parseReplayTarget does not resolve either.
    state.stage = 'target';
    const url = parseReplayTarget(request.targetUrl, deps.replay.defaultTarget);
    state.targetUrl = url.href;
    state.stage = 'resolve';

    const observed = observePolicy(policy);
    const { target, dispatcher } = await prepareReplayDelivery(url.href, undefined, {
      policy: observed.policy,
      selfAddresses: deps.selfAddresses().map((self) => ({
        ...self,
        routes: [...(self.routes ?? []), ...webhookRoutes],
      })),
      connectTimeoutMs: deps.replay.timeoutMs,
      onConnect: (connection) => {
        state.resolvedIp = connection.address;
        deps.onConnect?.(connection);
      },
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
      ...(deps.connect ? { connect: deps.connect } : {}),
    }).catch((error: unknown) => {
      state.resolvedIp = observed.refused() ?? observed.allowed() ?? null;
      // A "not-an-ip" refusal remembers whatever the resolver returned; only real addresses are audited.
      if (state.resolvedIp !== null && normaliseIp(state.resolvedIp) === undefined) state.resolvedIp = null;
      throw error;
    });
    state.targetUrl = target.url;
    state.resolvedIp = target.resolvedIp;
    state.stage = 'send';

    try {
      assertNotSender(target, event);
      // Signed last thing before sending, so a timestamped signature is as fresh as it can be.
      const headers = headersFor(event, provider, state);
      const outcome = await sendReplay({
        url: target.url,
        dispatcher,
        body: event.payload,
        headers,
        timeoutMs: deps.replay.timeoutMs,
        ...(deps.responseBodyLimitBytes === undefined ? {} : { responseBodyLimitBytes: deps.responseBodyLimitBytes }),
      });
      const result: ReplayResult = {
        id: event.id,
        target_url: target.url,
        delivered: true,
        response_status: outcome.status,
        response_ms: outcome.ms,
        ...(outcome.excerpt === undefined ? {} : { response_excerpt: outcome.excerpt }),
        ...(outcome.contentType === undefined ? {} : { response_content_type: outcome.contentType }),
      };
      if (!validateReplayResult(result)) {
        // Only a status outside 100-599 gets here: something answered, but not with HTTP as the contract knows it.
        throw new AppError(
          'replay_failed',
          `replay target answered with status ${outcome.status}, which is not an HTTP status`,
          { reason: 'no_answer' },
        );
      }
      return result;
    } finally {
      dispatcher.destroy().catch(() => undefined);
    }
  }

  return {
    async replay(request) {
      const state: AttemptState = {
        stage: 'event',
        eventId: request.eventId,
        caller: request.caller,
        startedAt: new Date(now()).toISOString(),
        provider: undefined,
        targetUrl: null,
        resolvedIp: null,
        credentials: undefined,
        unsigned: request.unsigned === true,
        eventExists: undefined,
      };
      let result: ReplayResult;
      try {
        result = await attempt(request, state);
      } catch (error) {
        const code = errorCodeOf(error);
        await auditor.settle(state, {
          delivered: false,
          responseStatus: null,
          responseMs: null,
          responseExcerpt: null,
          responseContentType: null,
          errorCode: code,
          errorReason: errorReasonOf(error, state.stage),
          message: error instanceof Error ? error.message : String(error),
          unexpected: code === 'internal' ? error : undefined,
        });
        throw error;
      }
      await auditor.settle(state, {
        delivered: true,
        responseStatus: result.response_status,
        responseMs: result.response_ms,
        responseExcerpt: result.response_excerpt ?? null,
        responseContentType: result.response_content_type ?? null,
        errorCode: null,
        errorReason: null,
        message: undefined,
      });
      return result;
    },
  };
}

/**
 * Wraps the policy to remember what it decided, so a refused attempt's audit row can name the
 * address that was refused: the policy's error carries it only inside a sentence.
 */
function observePolicy(inner: TargetPolicy): {
  policy: TargetPolicy;
  refused: () => string | undefined;
  allowed: () => string | undefined;
} {
  let refused: string | undefined;
  let allowed: string | undefined;
  const policy: TargetPolicy = {
    check(hostname, address) {
      const verdict = inner.check(hostname, address);
      if (verdict.allowed) allowed ??= verdict.address;
      else refused ??= verdict.address;
      return verdict;
    },
    assertAllowed(hostname, address) {
      const verdict = policy.check(hostname, address);
      if (!verdict.allowed) throw invalidArgument(verdict.message);
      return { address: verdict.address, family: verdict.family };
    },
  };
  return { policy, refused: () => refused, allowed: () => allowed };
}
