/** The audit trail of replays: every attempt, refused and failed ones included. */
import { ForeignKeyIntegrityConstraintViolationError, sql, type DatabasePool } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import type { ReplayAttempt } from '../../../generated/types.ts';
import {
  REPLAY_ERROR_CODES,
  REPLAY_ERROR_REASONS,
  type ReplayErrorCode,
  type ReplayErrorReason,
} from '../../../generated/constants.ts';
import { invalidArgument, notFound } from '../../errors/app-error.ts';
import { assertStorePool } from '../database/database.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import { parseTimestampInput, rfc3339FromMicros, utcColumn } from '../sql/timestamps.ts';
import { storableOrNull } from '../sql/storable-text.ts';
import { lookUpNearIdTime } from '../sql/id-time-bound.ts';

export interface NewReplayAttempt {
  eventId: string;
  /** Token name of the caller. */
  caller: string;
  targetUrl: string | null;
  resolvedIp: string | null;
  /** RFC 3339; defaults to the database's clock at insert. */
  startedAt?: string;
  delivered: boolean;
  responseStatus: number | null;
  responseMs: number | null;
  /** The start of the consumer's answer as text, or null when it was empty, not UTF-8, or never came. */
  responseExcerpt: string | null;
  responseContentType: string | null;
  errorCode: ReplayErrorCode | null;
  /** Why it did not deliver, in the history's terms; null when it delivered. Omitted: null. */
  errorReason?: ReplayErrorReason | null;
  /** Sent with no signature or token at the caller's request. */
  unsigned: boolean;
}

export interface ReplayAttemptRepository {
  /** not_found when the event does not exist (any more). */
  record(attempt: NewReplayAttempt): Promise<ReplayAttempt>;
  /** Newest first. */
  listForEvent(eventId: string): Promise<ReplayAttempt[]>;
}

const errorCode = z.enum(REPLAY_ERROR_CODES);

const EVENT_RECEIVED_AT = sql.fragment`events.received_at`;

const attemptRow = z.object({
  id: z.string(),
  event_id: z.string(),
  caller: z.string(),
  target_url: z.string().nullable(),
  resolved_ip: z.string().nullable(),
  started_at: z.string(),
  delivered: z.boolean(),
  response_status: z.number().int().nullable(),
  response_ms: z.number().nullable(),
  response_excerpt: z.string().nullable(),
  response_content_type: z.string().nullable(),
  unsigned: z.boolean(),
  error_code: errorCode.nullable(),
  error_reason: z.enum(REPLAY_ERROR_REASONS).nullable(),
});

/** The history leaves out what an attempt never had (the contract's fields are optional, not null). */
function attemptFromRow(row: z.infer<typeof attemptRow>): ReplayAttempt {
  const { response_excerpt: excerpt, response_content_type: contentType, error_reason: reason, ...attempt } = row;
  return {
    ...attempt,
    ...(excerpt === null ? {} : { response_excerpt: excerpt }),
    ...(contentType === null ? {} : { response_content_type: contentType }),
    ...(reason === null ? {} : { error_reason: reason }),
  };
}

const ATTEMPT_COLUMNS = sql.fragment`replay_attempts.id, replay_attempts.event_id, replay_attempts.caller,
  replay_attempts.target_url, replay_attempts.resolved_ip,
  ${utcColumn('replay_attempts', 'started_at')} AS started_at,
  replay_attempts.delivered, replay_attempts.response_status, replay_attempts.response_ms, replay_attempts.unsigned,
  replay_attempts.response_excerpt, replay_attempts.response_content_type,
  replay_attempts.error_code, replay_attempts.error_reason`;

export function createReplayAttemptRepository(pool: DatabasePool): ReplayAttemptRepository {
  assertStorePool(pool);

  const eventUuid = (eventId: string): string => {
    const uuid = normalizeEventId(eventId);
    if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
    return uuid;
  };

  return {
    async record(attempt) {
      const eventId = eventUuid(attempt.eventId);
      if (attempt.responseMs !== null && !(Number.isFinite(attempt.responseMs) && attempt.responseMs >= 0)) {
        throw invalidArgument('response_ms must be a non-negative number');
      }
      if (
        attempt.responseStatus !== null &&
        !(Number.isInteger(attempt.responseStatus) && attempt.responseStatus >= 100 && attempt.responseStatus <= 999)
      ) {
        throw invalidArgument('response_status must be an HTTP status code');
      }
      const startedAt =
        attempt.startedAt === undefined
          ? sql.fragment`clock_timestamp()`
          : sql.fragment`${rfc3339FromMicros(parseTimestampInput(attempt.startedAt, 'started_at', 'floor'))}::timestamptz`;
      try {
        // The attempt is filed in its event's partition, so it needs the event's received_at.
        const row = await lookUpNearIdTime(EVENT_RECEIVED_AT, eventId, (near) =>
          pool.maybeOne(sql.type(attemptRow)`
          INSERT INTO replay_attempts
            (id, event_id, event_received_at, caller, target_url, resolved_ip, started_at, delivered, response_status,
              response_ms, error_code, unsigned, response_excerpt, response_content_type, error_reason)
          SELECT ${uuidv7()}, events.id, events.received_at, ${attempt.caller}, ${attempt.targetUrl},
            ${attempt.resolvedIp}, ${startedAt}, ${attempt.delivered}, ${attempt.responseStatus}, ${attempt.responseMs},
            ${attempt.errorCode}, ${attempt.unsigned}, ${storableOrNull(attempt.responseExcerpt)},
            ${storableOrNull(attempt.responseContentType)}, ${attempt.errorReason ?? null}
          FROM events WHERE events.id = ${eventId} AND ${near}
          RETURNING ${ATTEMPT_COLUMNS}
        `),
        );
        if (!row) throw notFound(`no event with id ${eventId}`);
        return attemptFromRow(row);
      } catch (error) {
        if (error instanceof ForeignKeyIntegrityConstraintViolationError) throw notFound(`no event with id ${eventId}`);
        throw error;
      }
    },

    async listForEvent(eventId) {
      const rows = await pool.any(sql.type(attemptRow)`
        SELECT ${ATTEMPT_COLUMNS}
        FROM replay_attempts
        WHERE replay_attempts.event_id = ${eventUuid(eventId)}
        ORDER BY replay_attempts.started_at DESC, replay_attempts.id DESC
      `);
      return rows.map(attemptFromRow);
    },
  };
}
