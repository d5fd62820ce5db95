import type { ReplayResult } from '../../generated/types.ts';
import { validateReplayResult } from '../../generated/validators.js';
import type { ProviderConfig } from '../config/resolve-config.ts';
import { AppError, invalidArgument, notFound } from '../errors/app-error.ts';
import type { EventStore, StoredEvent } from '../store/events/event-store.ts';
import type { ReplayAttemptRepository } from '../store/records/replay-attempt-repository.ts';
import type { Logger } from '../log/logger.ts';
import type { Outbound } from '../outbound/deliver-event.ts';
import { createReplayAuditor, errorCodeOf, errorReasonOf, type AttemptState } from './replay-audit.ts';
import { chooseReplayTarget, replayError } from './replay-target.ts';
import { replaySigned } from './replay-signed.ts';
import type { ReplayRequest, ReplayService } from './replay-types.ts';

export interface ReplayServiceDeps {
  store: Pick<EventStore, 'get'>;
  attempts: Pick<ReplayAttemptRepository, 'record'>;
  providers: readonly ProviderConfig[];
  /** ResolvedConfig.replay. */
  replay: { defaultTarget: string | undefined; timeoutMs: number };
  /** Throws AppError rate_limited when the caller's replay bucket is empty. */
  checkRateLimit?: (caller: string) => void;
  logger: Logger;
  /** The one sending path, shared with forwarding: its target policy and credentials rule are replay's. */
  outbound: Outbound;
  /** Milliseconds since the epoch, for the audit row's start. Default Date.now. */
  now?: () => number;
}

/**
 * Why an event may not be replayed with credentials, or undefined when it may (it passed its
 * check, or it has none to pass). The message says why and what to do.
 */
function failedArrivalMessage(event: Pick<StoredEvent, 'trustMode' | 'passedCheck'>): string | undefined {
  if (event.passedCheck !== false) return undefined;
  const remedy = 'Pass `unsigned: true` to send the stored bytes without any signature or token.';
  return event.trustMode === 'signed'
    ? `this event failed signature verification on arrival; replaying it signed would make it look genuine. ${remedy}`
    : `this event did not pass its token check on arrival; replaying it with the token would make it look genuine. ${remedy}`;
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
  const providers = new Set(deps.providers.map((p) => p.name));
  const auditor = createReplayAuditor(deps.attempts, deps.logger);
  const { outbound } = deps;

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
    if (!providers.has(event.provider)) {
      deps.logger.warn(
        { eventId: event.id, provider: event.provider },
        'replaying an event whose provider is no longer configured',
      );
    }

    // No network before this line; choosing the target does not resolve either.
    state.stage = 'target';
    const url = chooseReplayTarget(request.targetUrl, deps.replay.defaultTarget);
    state.targetUrl = url.href;
    const outcome = await outbound.deliver({
      event,
      url,
      timeoutMs: deps.replay.timeoutMs,
      unsigned: state.unsigned,
      trace: state,
    });
    if (!outcome.ok) throw replayError(outcome.failure, url.href);
    const result: ReplayResult = {
      id: event.id,
      target_url: outcome.target.url,
      delivered: true,
      response_status: outcome.status,
      response_ms: outcome.ms,
      signed: replaySigned(state.credentials),
      signature_headers: [...(state.credentialHeaders ?? [])],
      ...(outcome.excerpt === undefined ? {} : { response_excerpt: outcome.excerpt }),
      ...(outcome.contentType === undefined ? {} : { response_content_type: outcome.contentType }),
    };
    if (!validateReplayResult(result)) {
      throw new AppError('replay_failed', 'replay result does not match its contract', { reason: 'internal' });
    }
    return result;
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
      const recorded = await auditor.settle(state, {
        delivered: true,
        responseStatus: result.response_status,
        responseMs: result.response_ms,
        responseExcerpt: result.response_excerpt ?? null,
        responseContentType: result.response_content_type ?? null,
        errorCode: null,
        errorReason: null,
        message: undefined,
      });
      // Delivered, but missing from the history any token holder reads: the caller is told.
      return recorded === 'failed' ? { ...result, history_recorded: false } : result;
    },
  };
}
