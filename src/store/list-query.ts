/**
 * list_webhook_events (and the HTTP API's search) as SQL. Every filter maps to a condition that
 * one of the events indexes can serve as an ordered range scan, and the page boundary is a row
 * comparison on (received_at, id), so page 1000 costs what page 1 costs.
 */
import { sql, type FragmentSqlToken, type QuerySqlToken } from 'slonik';
import { EVENT_PROVIDER_LIMITS, EVENT_TYPE_LIMITS, LIST_LIMIT, LIST_SINCE_LIMITS } from '../../generated/constants.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { decodeCursor } from './cursor.ts';
import { normalizeEventId } from './event-id.ts';
import { apiSummaryRow } from './event-mapping.ts';
import type { ListQuery } from './event-store.ts';
import { parseTimestampInput, rfc3339FromMicros, utcColumn } from './timestamps.ts';

/** Store-side bounds on search input, looser than the API's (SEARCH_*_LIMITS): the last line of defence. */
const MAX_Q_LENGTH = 500;
const MAX_MATCH_LENGTH = 10_000;

/** A point in the list order: received_at (canonical UTC text, microseconds) and id. */
export interface ListPosition {
  receivedAt: string;
  id: string;
}

/** A ListQuery after validation; only a `since` event id still needs a database lookup. */
export interface ResolvedListQuery {
  limit: number;
  provider: string | null;
  eventType: { column: 'event_type' | 'event_family'; value: string } | null;
  /** since as a timestamp: received_at > this. */
  sinceTime: string | null;
  /** since as an event id: events after that event in list order. */
  sinceEventId: string | null;
  /** Resolved from sinceEventId: (received_at, id) > this. */
  after: ListPosition | null;
  /** From the cursor: (received_at, id) < this. */
  before: ListPosition | null;
  from: string | null;
  to: string | null;
  verified: boolean | null;
  q: string | null;
  /** JSON text of the containment filter. */
  match: string | null;
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

export function resolveListQuery(query: ListQuery): ResolvedListQuery {
  const limit = query.limit ?? LIST_LIMIT.default;
  if (!Number.isInteger(limit) || limit < LIST_LIMIT.minimum || limit > LIST_LIMIT.maximum) {
    throw invalidArgument(`limit must be an integer from ${LIST_LIMIT.minimum} to ${LIST_LIMIT.maximum}`);
  }

  const eventType = text(query.eventType, 'event_type', EVENT_TYPE_LIMITS.maxLength);
  const since = text(query.since, 'since', LIST_SINCE_LIMITS.maxLength);
  let sinceEventId: string | null = null;
  let sinceTime: string | null = null;
  if (since !== null) {
    sinceEventId = normalizeEventId(since);
    if (sinceEventId === null) {
      sinceTime = rfc3339FromMicros(parseTimestampInput(since, 'since', 'floor'));
    }
  }

  let before: ListPosition | null = null;
  if (query.cursor !== undefined) {
    if (typeof query.cursor !== 'string') throw invalidArgument('malformed cursor');
    const position = decodeCursor(query.cursor);
    before = { receivedAt: rfc3339FromMicros(position.receivedAtMicros), id: position.id };
  }

  const q = text(query.q, 'q', MAX_Q_LENGTH);
  if (q !== null && q.trim() === '') throw invalidArgument('q must not be blank');
  if (query.verified !== undefined && typeof query.verified !== 'boolean') {
    throw invalidArgument('verified must be true or false');
  }

  return {
    limit,
    provider: text(query.provider, 'provider', EVENT_PROVIDER_LIMITS.maxLength),
    // A dotless type also matches its dotted sub-types, i.e. everything in its family.
    eventType:
      eventType === null ? null : { column: eventType.includes('.') ? 'event_type' : 'event_family', value: eventType },
    sinceTime,
    sinceEventId,
    after: null,
    before,
    from: query.from === undefined ? null : rfc3339FromMicros(parseTimestampInput(query.from, 'from', 'ceil')),
    to: query.to === undefined ? null : rfc3339FromMicros(parseTimestampInput(query.to, 'to', 'ceil')),
    verified: query.verified ?? null,
    q,
    match: matchJson(query.match),
  };
}

/** received_at rendered in SQL, so no client-side type parser ever sees (and rounds) it. */
export const receivedAtUtc = (table: string): FragmentSqlToken => utcColumn(table, 'received_at');

/**
 * The page query: limit + 1 rows, so the caller knows whether the page was truncated. Rows carry
 * the one-line summary, which the HTTP API lists and MCP leaves out.
 */
export function buildListSql(query: ResolvedListQuery): QuerySqlToken<typeof apiSummaryRow> {
  const conditions: FragmentSqlToken[] = [];
  if (query.provider !== null) conditions.push(sql.fragment`events.provider = ${query.provider}`);
  if (query.eventType !== null) {
    conditions.push(
      query.eventType.column === 'event_family'
        ? sql.fragment`events.event_family = ${query.eventType.value}`
        : sql.fragment`events.event_type = ${query.eventType.value}`,
    );
  }
  if (query.sinceTime !== null) conditions.push(sql.fragment`events.received_at > ${query.sinceTime}::timestamptz`);
  if (query.after !== null) {
    conditions.push(
      sql.fragment`(events.received_at, events.id) > (${query.after.receivedAt}::timestamptz, ${query.after.id}::uuid)`,
    );
  }
  if (query.before !== null) {
    conditions.push(
      sql.fragment`(events.received_at, events.id) < (${query.before.receivedAt}::timestamptz, ${query.before.id}::uuid)`,
    );
  }
  if (query.from !== null) conditions.push(sql.fragment`events.received_at >= ${query.from}::timestamptz`);
  if (query.to !== null) conditions.push(sql.fragment`events.received_at < ${query.to}::timestamptz`);
  if (query.verified !== null) conditions.push(sql.fragment`events.verified = ${query.verified}`);
  const where = (extra: FragmentSqlToken[]): FragmentSqlToken => {
    const all = [...conditions, ...extra];
    return all.length === 0 ? sql.fragment`` : sql.fragment`WHERE ${sql.join(all, sql.fragment` AND `)}`;
  };
  const columns = sql.fragment`events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
      ${receivedAtUtc('events')} AS received_at_utc, events.summary`;
  const limit = query.limit + 1;

  if (query.q === null && query.match === null) {
    // ORDER BY names the table's columns explicitly: the rendered received_at_utc text must not be
    // mistaken for the sort key, or the index order would be lost to a sort.
    return sql.type(apiSummaryRow)`
      SELECT ${columns}
      FROM events
      ${where([])}
      ORDER BY events.received_at DESC, events.id DESC
      LIMIT ${limit}
    `;
  }

  // A payload search reads two disjoint sets, each cut to one page before they are merged:
  // - indexed events, through event_search's GIN indexes. As its own query with its own ORDER BY
  //   and LIMIT, the planner keeps the choice it had when the columns lived on events: a bitmap
  //   scan of the GIN index for a rare term, or a walk down the received_at index probing
  //   event_search for a common one;
  // - events still queued for the indexer, matched on the fly so a search never misses an event
  //   that was just acknowledged. The queue drives (OFFSET 0 keeps the per-entry lookup from being
  //   flattened into a join the planner could turn into a scan of all events), so this costs one
  //   lookup per queued event however large events is.
  const indexed: FragmentSqlToken[] = [];
  const pending: FragmentSqlToken[] = [];
  if (query.q !== null) {
    indexed.push(sql.fragment`event_search.payload_tsv @@ websearch_to_tsquery('simple', ${query.q})`);
    pending.push(
      sql.fragment`switchboard_payload_tsvector(events.payload) @@ websearch_to_tsquery('simple', ${query.q})`,
    );
  }
  if (query.match !== null) {
    indexed.push(sql.fragment`event_search.payload_json @> ${query.match}::jsonb`);
    pending.push(sql.fragment`switchboard_payload_jsonb(events.payload) @> ${query.match}::jsonb`);
  }
  return sql.type(apiSummaryRow)`
    SELECT found.id, found.provider, found.event_type, found.trust_mode, found.verified, found.payload_size, found.received_at_utc, found.summary
    FROM (
      (
        SELECT ${columns}, events.received_at
        FROM events JOIN event_search ON event_search.event_id = events.id
        ${where(indexed)}
        ORDER BY events.received_at DESC, events.id DESC
        LIMIT ${limit}
      )
      UNION ALL
      (
        SELECT queued.*
        FROM event_search_queue
        CROSS JOIN LATERAL (
          SELECT ${columns}, events.received_at
          FROM events
          ${where([sql.fragment`events.id = event_search_queue.event_id`, ...pending])}
          OFFSET 0
        ) AS queued
        ORDER BY queued.received_at DESC, queued.id DESC
        LIMIT ${limit}
      )
    ) AS found
    ORDER BY found.received_at DESC, found.id DESC
    LIMIT ${limit}
  `;
}
