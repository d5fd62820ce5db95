/**
 * list_webhook_events (and the HTTP API's search) as SQL. Every filter maps to a condition that
 * one of the events indexes can serve as an ordered range scan, read forwards for oldest_first
 * and backwards for newest_first, and the page boundary is a row comparison on (received_at, id),
 * so page 1000 costs what page 1 costs in either order.
 */
import { sql, type FragmentSqlToken, type QuerySqlToken } from 'slonik';
import {
  EVENT_PROVIDER_LIMITS,
  EVENT_TYPE_LIMITS,
  LIST_LIMIT,
  LIST_ORDER,
  LIST_ORDERS,
  LIST_SINCE_LIMITS,
  LIST_UNTIL_LIMITS,
  SEARCH_MATCH_LIMITS,
  type ListOrder,
} from '../../../generated/constants.ts';
import type { ListWebhookEventsInput } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { decodeCursor, queryFingerprint } from './cursor.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import { apiSummaryRow } from './event-mapping.ts';
import { buildSearchSql, type SearchParts } from './search-query.ts';
import type { ListQuery } from './event-store.ts';
import { parseTimestampInput, rfc3339FromMicros, utcColumn, type Rounding } from '../sql/timestamps.ts';

/** Store-side bounds on search input, looser than the API's (SEARCH_*_LIMITS): the last line of defence. */
const MAX_Q_LENGTH = 500;
const MAX_MATCH_LENGTH = 10_000;

/** A point in the list order: received_at (canonical UTC text, microseconds) and id. */
export interface ListPosition {
  receivedAt: string;
  id: string;
}

/** since or until: a time, or an event whose position the database has to look up. */
type ListBound = { time: string } | { eventId: string };

/** A ListQuery after validation; only since/until event ids still need a database lookup. */
export interface ResolvedListQuery {
  limit: number;
  order: ListOrder;
  provider: string | null;
  eventType: { column: 'event_type' | 'event_family'; value: string } | null;
  since: ListBound | null;
  until: ListBound | null;
  /** since resolved to a position: (received_at, id) > this. */
  after: ListPosition | null;
  /** until resolved to a position: (received_at, id) <= this. */
  upTo: ListPosition | null;
  /** From the cursor: the last event of the previous page; this page continues past it in order. */
  cursor: ListPosition | null;
  from: string | null;
  to: string | null;
  verified: boolean | null;
  q: string | null;
  /** JSON text of the containment filter. */
  match: string | null;
  /** What next_cursor is bound to: every filter and the order (not the page size). */
  fingerprint: Buffer;
}

function text(value: string | undefined, field: string, max: number): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw invalidArgument(`${field} must be a string of 1 to ${max} characters`);
  }
  // PostgreSQL text cannot hold NUL; such a value cannot match anything stored anyway.
  if (value.includes('\u0000')) throw invalidArgument(`${field} must not contain NUL characters`);
  return value;
}

// JSON.stringify writes \u0000 and lone surrogates as escapes, which jsonb refuses to parse.
const JSONB_UNSAFE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

function matchJson(match: Record<string, unknown> | undefined): string | null {
  if (match === undefined) return null;
  if (typeof match !== 'object' || match === null || Array.isArray(match)) {
    throw invalidArgument('match must be a JSON object');
  }
  let json: string;
  try {
    json = JSON.stringify(match);
  } catch {
    throw invalidArgument('match must be a JSON object');
  }
  if (json.length > MAX_MATCH_LENGTH)
    throw invalidArgument(`match must be at most ${MAX_MATCH_LENGTH} characters of JSON`);
  if (JSONB_UNSAFE_ESCAPE.test(json))
    throw invalidArgument('match must not contain NUL characters or unpaired surrogates');
  return json;
}

/** The same JSON value whatever order its keys were written in: for the cursor fingerprint. */
function canonicalJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalJson);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.map(([key, inner]) => [key, canonicalJson(inner)]);
}

/** since/until: an event id, else an ISO-8601 time; the message names both forms. */
function bound(value: string | undefined, field: 'since' | 'until', max: number, rounding: Rounding): ListBound | null {
  const given = text(value, field, max);
  if (given === null) return null;
  const eventId = normalizeEventId(given);
  if (eventId !== null) return { eventId };
  try {
    return { time: rfc3339FromMicros(parseTimestampInput(given, field, rounding)) };
  } catch {
    throw invalidArgument(
      `${field} must be an ISO-8601 time such as 2024-05-01T12:00:00Z, or an event id (a UUID from list_webhook_events)`,
    );
  }
}

const boundKey = (b: ListBound | null): string | null =>
  b === null ? null : 'eventId' in b ? `event:${b.eventId}` : `time:${b.time}`;

function order(value: ListOrder | undefined): ListOrder {
  if (value === undefined) return LIST_ORDER.default;
  if (!(LIST_ORDERS as readonly string[]).includes(value)) {
    throw invalidArgument(`order must be one of ${LIST_ORDERS.join(', ')}`);
  }
  return value;
}

export function resolveListQuery(query: ListQuery): ResolvedListQuery {
  const limit = query.limit ?? LIST_LIMIT.default;
  if (!Number.isInteger(limit) || limit < LIST_LIMIT.minimum || limit > LIST_LIMIT.maximum) {
    throw invalidArgument(`limit must be an integer from ${LIST_LIMIT.minimum} to ${LIST_LIMIT.maximum}`);
  }

  const provider = text(query.provider, 'provider', EVENT_PROVIDER_LIMITS.maxLength);
  const eventType = text(query.eventType, 'event_type', EVENT_TYPE_LIMITS.maxLength);
  // since: received_at > t, which for a column of whole microseconds is received_at > floor(t);
  // until: received_at <= t, likewise received_at <= floor(t).
  const since = bound(query.since, 'since', LIST_SINCE_LIMITS.maxLength, 'floor');
  const until = bound(query.until, 'until', LIST_UNTIL_LIMITS.maxLength, 'floor');
  const sortOrder = order(query.order);

  const q = text(query.q, 'q', MAX_Q_LENGTH);
  if (q !== null && q.trim() === '') throw invalidArgument('q must not be blank');
  if (query.verified !== undefined && typeof query.verified !== 'boolean') {
    throw invalidArgument('verified must be true or false');
  }
  const verified = query.verified ?? null;
  const match = matchJson(query.match);
  const from = query.from === undefined ? null : rfc3339FromMicros(parseTimestampInput(query.from, 'from', 'ceil'));
  const to = query.to === undefined ? null : rfc3339FromMicros(parseTimestampInput(query.to, 'to', 'ceil'));

  const fingerprint = queryFingerprint([
    sortOrder,
    provider,
    eventType,
    boundKey(since),
    boundKey(until),
    from,
    to,
    verified,
    q,
    query.match === undefined ? null : canonicalJson(query.match),
  ]);

  let cursor: ListPosition | null = null;
  if (query.cursor !== undefined) {
    if (typeof query.cursor !== 'string') throw invalidArgument('cursor must be a string');
    const position = decodeCursor(query.cursor, fingerprint);
    cursor = { receivedAt: rfc3339FromMicros(position.receivedAtMicros), id: position.id };
  }

  return {
    limit,
    order: sortOrder,
    provider,
    // A dotless type also matches its dotted sub-types, i.e. everything in its family.
    eventType:
      eventType === null ? null : { column: eventType.includes('.') ? 'event_type' : 'event_family', value: eventType },
    since,
    until,
    after: null,
    upTo: null,
    cursor,
    from,
    to,
    verified,
    q,
    match,
    fingerprint,
  };
}

/**
 * A list_webhook_events input (as the MCP tool and GET /api/events both hand it over, already
 * checked against the input schema) as the store's ListQuery, with the checks the schema cannot
 * state: a blank q, and the size of match as JSON.
 */
export function listQueryFromInput(input: ListWebhookEventsInput): ListQuery {
  const query: ListQuery = {};
  if (input.provider !== undefined) query.provider = input.provider;
  if (input.event_type !== undefined) query.eventType = input.event_type;
  if (input.since !== undefined) query.since = input.since;
  if (input.until !== undefined) query.until = input.until;
  if (input.order !== undefined) query.order = input.order;
  if (input.limit !== undefined) query.limit = input.limit;
  if (input.cursor !== undefined) query.cursor = input.cursor;
  if (input.verified !== undefined) query.verified = input.verified;
  if (input.q !== undefined) {
    const q = input.q.trim();
    if (q === '') throw invalidArgument('q must not be blank');
    query.q = q;
  }
  if (input.match !== undefined) {
    if (JSON.stringify(input.match).length > SEARCH_MATCH_LIMITS.maxLength) {
      throw invalidArgument(`match must be at most ${SEARCH_MATCH_LIMITS.maxLength} characters as JSON`);
    }
    query.match = input.match;
  }
  return query;
}

/** received_at rendered in SQL, so no client-side type parser ever sees (and rounds) it. */
export const receivedAtUtc = (table: string): FragmentSqlToken => utcColumn(table, 'received_at');

/** A list query's filters, columns, order and row count (limit + 1) as SQL. */
function listParts(query: ResolvedListQuery): Omit<SearchParts, 'q' | 'match' | 'from' | 'to'> {
  const conditions: FragmentSqlToken[] = [];
  if (query.provider !== null) conditions.push(sql.fragment`events.provider = ${query.provider}`);
  if (query.eventType !== null) {
    conditions.push(
      query.eventType.column === 'event_family'
        ? sql.fragment`events.event_family = ${query.eventType.value}`
        : // The family is named too: an exact type is served by the family's index (migration 0009
          // dropped the per-type ones), its other sub-types filtered out along the way.
          sql.fragment`events.event_family = ${query.eventType.value.split('.')[0] ?? ''} AND events.event_type = ${query.eventType.value}`,
    );
  }
  const position = (p: ListPosition): FragmentSqlToken => sql.fragment`(${p.receivedAt}::timestamptz, ${p.id}::uuid)`;
  if (query.since !== null && 'time' in query.since) {
    conditions.push(sql.fragment`events.received_at > ${query.since.time}::timestamptz`);
  }
  if (query.after !== null) conditions.push(sql.fragment`(events.received_at, events.id) > ${position(query.after)}`);
  if (query.until !== null && 'time' in query.until) {
    conditions.push(sql.fragment`events.received_at <= ${query.until.time}::timestamptz`);
  }
  if (query.upTo !== null) conditions.push(sql.fragment`(events.received_at, events.id) <= ${position(query.upTo)}`);
  if (query.cursor !== null) {
    conditions.push(
      query.order === 'oldest_first'
        ? sql.fragment`(events.received_at, events.id) > ${position(query.cursor)}`
        : sql.fragment`(events.received_at, events.id) < ${position(query.cursor)}`,
    );
  }
  if (query.from !== null) conditions.push(sql.fragment`events.received_at >= ${query.from}::timestamptz`);
  if (query.to !== null) conditions.push(sql.fragment`events.received_at < ${query.to}::timestamptz`);
  if (query.verified !== null) conditions.push(sql.fragment`events.verified = ${query.verified}`);
  const columns = sql.fragment`events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
      ${receivedAtUtc('events')} AS received_at_utc, events.summary`;
  // Both directions walk the same (…, received_at DESC, id DESC) indexes, oldest_first backwards.
  const direction = query.order === 'oldest_first' ? sql.fragment`ASC` : sql.fragment`DESC`;
  return { conditions, columns, direction, limit: query.limit + 1 };
}

/** A search's parts (q or match given): what search-query.ts builds its statements from. */
export function searchParts(query: ResolvedListQuery): SearchParts {
  return { ...listParts(query), q: query.q, match: query.match, from: query.from, to: query.to };
}

/**
 * The page query: limit + 1 rows, so the caller knows whether the page was truncated. Rows carry
 * the one-line summary, which the HTTP API lists and MCP leaves out.
 */
export function buildListSql(query: ResolvedListQuery): QuerySqlToken<typeof apiSummaryRow> {
  if (query.q !== null || query.match !== null) return buildSearchSql(searchParts(query));
  const { conditions, columns, direction, limit } = listParts(query);
  // ORDER BY names the table's columns explicitly: the rendered received_at_utc text must not be
  // mistaken for the sort key, or the index order would be lost to a sort.
  return sql.type(apiSummaryRow)`
    SELECT ${columns}
    FROM events
    ${conditions.length === 0 ? sql.fragment`` : sql.fragment`WHERE ${sql.join(conditions, sql.fragment` AND `)}`}
    ORDER BY events.received_at ${direction}, events.id ${direction}
    LIMIT ${limit}
  `;
}
