/**
 * Row shapes the store reads, and the mapping from a row to a stored event or a list's summary.
 * Turning a stored event into the contract's wire shapes is event-wire/'s.
 */
import { z } from 'zod';
import { REPLY_OUTCOMES, TRUST_MODES } from '../../../generated/constants.ts';
import type { ApiEventSummary, EventReply, EventSummary, TrustMode } from '../../../generated/types.ts';
import { isEventId } from '../../shared/event-id.ts';
import type { ArrivalRequest } from '../../sanitize/sanitize-request.ts';
import { withoutCredentialFields } from '../../verify/summary.ts';
import type { NewEvent, StoredEvent } from './event-store.ts';
import { storable, storableHeaders, storableOrNull } from '../sql/storable-text.ts';
import type { EventHeaders } from '../../../generated/types.ts';

const CANONICAL_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const trustMode = z.enum(TRUST_MODES);
const timestamp = z.string().regex(CANONICAL_TIMESTAMP);
const headerValue = z.union([z.string(), z.tuple([z.string(), z.string()]).rest(z.string())]);

const eventHeadersSchema = z.record(z.string(), headerValue);

/** Columns of a summary; received_at arrives pre-rendered so no type parser can round it. */
export const summaryRow = z.object({
  id: z.string().refine(isEventId),
  provider: z.string(),
  event_type: z.string(),
  trust_mode: trustMode,
  verified: z.boolean(),
  payload_size: z.number().int().nonnegative(),
  received_at_utc: timestamp,
});
export type SummaryRow = z.infer<typeof summaryRow>;

/** An event's place in the list order (received_at, then id), as inserts answer and since/until name it. */
export const positionRow = z.object({ id: z.string(), received_at_utc: z.string() });

/** A summary row with the one-line summary, as the HTTP API lists events. */
export const apiSummaryRow = summaryRow.extend({ summary: z.string().nullable() });
export type ApiSummaryRow = z.infer<typeof apiSummaryRow>;

const detailRow = apiSummaryRow.extend({
  passed_check: z.boolean().nullable(),
  received_size: z.number().int().nullable(),
  verify_detail: z.string(),
  external_id: z.string().nullable(),
  content_type: z.string().nullable(),
  source_ip: z.string().nullable(),
  headers: eventHeadersSchema,
  payload: z.instanceof(Buffer),
  request_method: z.string().nullable(),
  request_path: z.string().nullable(),
  request_query: z.string().nullable(),
  response_status: z.number().int().nullable(),
  handshake: z.boolean().nullable(),
});
export type DetailRow = z.infer<typeof detailRow>;

/** The reply columns (migration 0020), read by get() only: the outbox's claim has no use for them. */
const replyColumns = z.object({
  reply_outcome: z.enum(REPLY_OUTCOMES).nullable(),
  reply_status: z.number().int().nullable(),
  reply_ms: z.number().nullable(),
});
export const eventRow = detailRow.merge(replyColumns);

/** The recorded answer of a provider that waited for the app's (StoredEvent.reply); nothing when none was recorded. */
export function replyFromRow(row: z.infer<typeof replyColumns>): { reply?: EventReply } {
  if (row.reply_outcome === null) return {};
  const status = row.reply_status === null ? {} : { response_status: row.reply_status };
  return { reply: { outcome: row.reply_outcome, ...status, response_ms: row.reply_ms ?? 0 } };
}

/** The EventSummary fields every surface shares; each surface adds its own one-line summary, or none. */
export type SummaryFields = Omit<EventSummary, 'summary'>;

export function summaryFromRow(row: SummaryRow): SummaryFields {
  return {
    id: row.id,
    provider: row.provider,
    event_type: row.event_type,
    trust_mode: row.trust_mode,
    verified: row.verified,
    payload_size: row.payload_size,
    received_at: row.received_at_utc,
  };
}

export function apiSummaryFromRow(row: ApiSummaryRow): ApiEventSummary {
  const summary = summaryFromRow(row);
  const line = withoutCredentialFields(row.summary);
  return line === null ? summary : { ...summary, summary: line };
}

/** The request columns, which the database keeps all set or all null (events_request_complete). */
function requestOf(row: DetailRow): ArrivalRequest | null {
  const { request_method: method, request_path: path, request_query: query, response_status: status } = row;
  if (method === null || path === null || query === null || status === null) return null;
  return { method, path, query, responseStatus: status };
}

/** Whether a trust mode has a check that can pass or fail on arrival. */
export const isCheckedTrustMode = (mode: TrustMode): boolean => mode === 'signed' || mode === 'token';

/**
 * The recorded outcome. A signed row without one (a bulk writer, or a row older than the column)
 * has it in `verified`; a token row without one is not taken to have passed.
 */
function passedCheckOf(row: Pick<DetailRow, 'trust_mode' | 'verified' | 'passed_check'>): boolean | null {
  if (!isCheckedTrustMode(row.trust_mode)) return null;
  if (row.trust_mode === 'signed') return row.passed_check ?? row.verified;
  return row.passed_check === true;
}

export function storedEventFromRow(row: DetailRow): StoredEvent {
  return {
    id: row.id,
    provider: row.provider,
    eventType: row.event_type,
    trustMode: row.trust_mode,
    verified: row.verified,
    passedCheck: passedCheckOf(row),
    verifyDetail: row.verify_detail,
    externalId: row.external_id,
    contentType: row.content_type,
    sourceIp: row.source_ip,
    headers: row.headers,
    payload: row.payload,
    payloadSize: row.payload_size,
    receivedSize: row.received_size,
    receivedAt: row.received_at_utc,
    summary: withoutCredentialFields(row.summary),
    request: requestOf(row),
    handshake: row.handshake,
  };
}

/**
 * The event an insert has just committed, as a read of it would answer, made from what was
 * inserted and the row's own summary (its id, names, size and commit time as stored), without
 * reading it back: the reply path sends it to the app while the provider waits, and a read there
 * was a round trip, and a wait for a pool connection, on every reply.
 */
export function storedEventFromInsert(event: NewEvent, inserted: EventSummary): StoredEvent {
  const { trust_mode: trustMode, verified } = inserted;
  const { request } = event;
  return {
    id: inserted.id,
    provider: inserted.provider,
    eventType: inserted.event_type,
    trustMode,
    verified,
    passedCheck: passedCheckOf({
      trust_mode: trustMode,
      verified,
      passed_check: event.passedCheck ?? (trustMode === 'signed' ? verified : false),
    }),
    // Text as the insert wrote it (storable-text.ts): almost always the very values.
    verifyDetail: storable(event.verifyDetail),
    externalId: storableOrNull(event.externalId),
    contentType: storableOrNull(event.contentType),
    sourceIp: storableOrNull(event.sourceIp),
    headers: JSON.parse(storableHeaders(event.headers)) as EventHeaders,
    payload: event.payload,
    payloadSize: inserted.payload_size,
    receivedSize: event.receivedSize ?? null,
    receivedAt: inserted.received_at,
    summary: withoutCredentialFields(storableOrNull(event.summary ?? null)),
    request:
      request === undefined
        ? null
        : {
            method: storable(request.method),
            path: storable(request.path),
            query: storable(request.query),
            responseStatus: request.responseStatus,
          },
    handshake: event.handshake === true,
  };
}
