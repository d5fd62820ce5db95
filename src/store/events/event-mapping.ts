/**
 * Row shapes the store reads, and the one mapping from a stored event to the contract shapes, so
 * MCP, the HTTP API and the UI cannot disagree about how an event looks.
 */
import { z } from 'zod';
import { TRUST_MODES } from '../../../generated/constants.ts';
import type {
  ApiEventSummary,
  EventDetail,
  EventHeaders,
  EventPayload,
  EventSummary,
  TrustMode,
} from '../../../generated/types.ts';
import { isEventId } from '../../shared/event-id.ts';
import type { ArrivalRequest } from '../../sanitize/sanitize-request.ts';
import type { StoredEvent } from './event-store.ts';

const CANONICAL_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const trustMode = z.enum(TRUST_MODES);
const timestamp = z.string().regex(CANONICAL_TIMESTAMP);
const headerValue = z.union([z.string(), z.tuple([z.string(), z.string()]).rest(z.string())]);

export const eventHeadersSchema = z.record(z.string(), headerValue);

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

export const detailRow = apiSummaryRow.extend({
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
});
export type DetailRow = z.infer<typeof detailRow>;

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
  return row.summary === null ? summary : { ...summary, summary: row.summary };
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
    summary: row.summary,
    request: requestOf(row),
  };
}

export function toEventSummary(stored: StoredEvent): SummaryFields {
  return {
    id: stored.id,
    provider: stored.provider,
    event_type: stored.eventType,
    trust_mode: stored.trustMode,
    verified: stored.verified,
    payload_size: stored.payloadSize,
    received_at: stored.receivedAt,
  };
}

// ignoreBOM keeps a leading U+FEFF in the text, so encoding the text again yields the same bytes.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * utf8 when the bytes are well-formed UTF-8 (a fatal decoder rejects overlong forms, surrogates and
 * truncated sequences, which is exactly the set that would not re-encode identically), else base64.
 */
export function toEventPayload(bytes: Buffer): EventPayload {
  try {
    return { encoding: 'utf8', data: strictUtf8.decode(bytes) };
  } catch {
    return { encoding: 'base64', data: bytes.toString('base64') };
  }
}

/**
 * At most maxBytes of the payload, in the encoding the whole payload travels in (a binary body
 * whose first bytes happen to be text stays base64). Text is cut at the last whole UTF-8
 * character within the limit, base64 after exactly maxBytes bytes, so either way what is
 * returned is a prefix of the stored bytes.
 */
export function limitedPayload(bytes: Buffer, maxBytes: number): { payload: EventPayload; truncated: boolean } {
  const whole = toEventPayload(bytes);
  if (bytes.length <= maxBytes) return { payload: whole, truncated: false };
  if (whole.encoding === 'base64') {
    return { payload: { encoding: 'base64', data: bytes.subarray(0, maxBytes).toString('base64') }, truncated: true };
  }
  let cut = maxBytes;
  // A continuation byte (10xxxxxx) at the cut means a character would be split: step back to its start.
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut -= 1;
  return { payload: { encoding: 'utf8', data: strictUtf8.decode(bytes.subarray(0, cut)) }, truncated: true };
}

/**
 * The full detail. With maxPayloadBytes (get_webhook_event), a longer payload is cut to it and
 * payload_truncated says so, while payload_size still gives the whole stored size.
 */
export function toEventDetail(stored: StoredEvent, options: { maxPayloadBytes?: number } = {}): EventDetail {
  const headers: EventHeaders = { ...stored.headers };
  const { request } = stored;
  const { payload, truncated } =
    options.maxPayloadBytes === undefined
      ? { payload: toEventPayload(stored.payload), truncated: false }
      : limitedPayload(stored.payload, options.maxPayloadBytes);
  return {
    ...toEventSummary(stored),
    ...(stored.summary === null ? {} : { summary: stored.summary }),
    ...(stored.passedCheck === null ? {} : { passed_check: stored.passedCheck }),
    verify_detail: stored.verifyDetail,
    external_id: stored.externalId,
    content_type: stored.contentType,
    source_ip: stored.sourceIp,
    headers,
    payload,
    ...(truncated || stored.receivedSize !== null ? { payload_truncated: true } : {}),
    ...(stored.receivedSize === null ? {} : { received_size: stored.receivedSize }),
    ...(request === null
      ? {}
      : {
          request: {
            method: request.method,
            path: request.path,
            query: request.query,
            response_status: request.responseStatus,
          },
        }),
  };
}
