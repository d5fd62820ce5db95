import type { Logger } from '../log/logger.ts';
import type { ReplayErrorCode, ReplayErrorReason } from '../../generated/constants.ts';
import { AppError } from '../errors/app-error.ts';
import type { NewReplayAttempt, ReplayAttemptRepository } from '../store/records/replay-attempt-repository.ts';
import type { CredentialKind } from '../outbound/credentials.ts';
import type { DeliveryStage } from '../outbound/deliver-event.ts';
import { displayTarget, recordedTarget } from '../outbound/send-request.ts';

/** How far an attempt got (deliver-event's stages); AttemptResult.errorReason depends on it. */
export type AttemptStage = DeliveryStage;

/**
 * Everything learned about one replay attempt, filled in as the attempt gets further. What the
 * audit row records is the repository's own field, so the two cannot drift apart.
 */
export interface AttemptState extends Pick<
  NewReplayAttempt,
  'eventId' | 'caller' | 'targetUrl' | 'resolvedIp' | 'unsigned'
> {
  stage: AttemptStage;
  startedAt: string;
  provider: string | undefined;
  credentials: CredentialKind | undefined;
  /** The names of the headers the credentials set (deliver-event fills it in). */
  credentialHeaders?: readonly string[];
  /**
   * False when the event id is known to have no row (not_found, malformed id): the
   * replay_attempts row references events, so such an attempt can only be logged.
   */
  eventExists: boolean | undefined;
}

/** How the attempt ended: the audit row's outcome fields (the repository's), plus what only the log gets. */
interface AttemptResult extends Pick<
  NewReplayAttempt,
  'delivered' | 'responseStatus' | 'responseMs' | 'responseExcerpt' | 'responseContentType' | 'errorCode'
> {
  /** Why it did not deliver, for the history (errorReasonOf); null when it delivered. */
  errorReason: ReplayErrorReason | null;
  /** The error's message, for the log; AppError messages carry no secrets by construction. */
  message: string | undefined;
  /** An unexpected failure, logged whole (with its stack) so the internal error can be traced. */
  unexpected?: unknown;
}

/** Whether the attempt's row is in replay_attempts; 'failed' when writing it failed (and was logged). */
type AuditRecorded = 'yes' | 'no-event-row' | 'failed';

export interface ReplayAuditor {
  settle(state: AttemptState, result: AttemptResult): Promise<AuditRecorded>;
}

/** The code the audit row and replay history carry: one of the replay (tool) codes. */
export function errorCodeOf(error: unknown): ReplayErrorCode {
  return error instanceof AppError ? error.toolCode : 'internal';
}

/**
 * Why an attempt that threw did not deliver. A transport failure says so itself (AppError.reason:
 * refused, reset, timed out); otherwise the stage it failed at tells a refusal's subject apart:
 * the event (it failed its check on arrival), the URL, or the address it resolved to.
 */
export function errorReasonOf(error: unknown, stage: AttemptStage): ReplayErrorReason | null {
  if (!(error instanceof AppError)) return 'internal';
  if (error.reason !== undefined) return error.reason;
  switch (error.toolCode) {
    case 'rate_limited':
      return 'rate_limited';
    case 'internal':
      return 'internal';
    case 'not_found':
      return null;
    case 'invalid_argument':
      return stage === 'event' ? 'failed_check' : stage === 'target' ? 'bad_target' : 'target_not_allowed';
    case 'replay_failed':
      return stage === 'resolve' ? 'could_not_resolve' : 'could_not_connect';
  }
}

/**
 * Writes the audit row and the log line for one attempt. A failure to write the row is logged as
 * an error and answered as 'failed', never thrown: for a delivered replay the request has already
 * left, and turning that into an error would invite the caller to send it again. The replay's
 * result says instead that its history row is missing.
 */
export function createReplayAuditor(attempts: Pick<ReplayAttemptRepository, 'record'>, logger: Logger): ReplayAuditor {
  return {
    async settle(state, result) {
      const row: NewReplayAttempt = {
        eventId: state.eventId,
        caller: state.caller,
        targetUrl: state.targetUrl === null ? null : recordedTarget(state.targetUrl),
        resolvedIp: state.resolvedIp,
        startedAt: state.startedAt,
        delivered: result.delivered,
        responseStatus: result.responseStatus,
        responseMs: result.responseMs,
        responseExcerpt: result.responseExcerpt,
        responseContentType: result.responseContentType,
        errorCode: result.errorCode,
        errorReason: result.errorReason,
        unsigned: state.unsigned,
      };
      let recorded: AuditRecorded = 'yes';
      if (state.eventExists === false) {
        recorded = 'no-event-row';
      } else {
        try {
          await attempts.record(row);
        } catch (error) {
          // A rate-limited call never looked the event up, so the id may name nothing (not_found)
          // or be no UUID at all (invalid_argument); the log line below is then the only record.
          if (error instanceof AppError && (error.code === 'not_found' || error.code === 'invalid_argument')) {
            recorded = 'no-event-row';
          } else {
            recorded = 'failed';
            logger.error(
              { err: error, eventId: state.eventId },
              'replay attempt could not be recorded in replay_attempts',
            );
          }
        }
      }

      const fields = {
        replay: {
          eventId: state.eventId,
          provider: state.provider,
          caller: state.caller,
          target: state.targetUrl === null ? null : displayTarget(state.targetUrl),
          resolvedIp: state.resolvedIp,
          startedAt: state.startedAt,
          delivered: result.delivered,
          status: result.responseStatus,
          ms: result.responseMs,
          errorCode: result.errorCode,
          errorReason: result.errorReason,
          credentials: state.credentials,
          unsigned: state.unsigned,
          recorded,
        },
      };
      if (result.errorCode === null) logger.info(fields, 'replay delivered');
      else if (result.errorCode === 'internal')
        logger.error({ ...fields, err: result.unexpected }, 'replay failed unexpectedly');
      else
        logger.warn(
          { ...fields, error: result.message },
          `replay ${result.errorCode === 'replay_failed' ? 'failed' : 'refused'}`,
        );
      return recorded;
    },
  };
}
