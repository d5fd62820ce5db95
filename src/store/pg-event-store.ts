/**
 * The EventStore on PostgreSQL. Ingest group-commits, so insertMany is the hot path: a whole batch
 * is one statement (unnest of column arrays), retried deliveries included.
 *
 * Over 400 lines: the store's statements stay beside the row shapes and column order they share;
 * the list query, cursors, search and mapping are already modules of their own.
 */
import { sql, UniqueIntegrityConstraintViolationError, type DatabasePool } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import {
  EVENT_PROVIDER_LIMITS,
  EVENT_REQUEST_METHOD_LIMITS,
  EVENT_REQUEST_PATH_LIMITS,
  EVENT_REQUEST_QUERY_LIMITS,
  EVENT_RESPONSE_STATUS_LIMITS,
  EVENT_SUMMARY_LIMITS,
  EVENT_TYPE_LIMITS,
  TRUST_MODES,
} from '../../generated/constants.ts';
import type {
  ApiEventList,
  ApiEventSummary,
  EventHeaders,
  EventSummary,
  ListWebhookEventsOutput,
} from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { ANNOUNCE_INSERTED } from './announcement.ts';
import { encodeByteaArray } from './bytea-array.ts';
import { encodeCursor } from './cursor.ts';
import { assertStorePool } from './database.ts';
import { normalizeEventId } from '../shared/event-id.ts';
import {
  apiSummaryFromRow,
  apiSummaryRow,
  detailRow,
  isCheckedTrustMode,
  storedEventFromRow,
  summaryFromRow,
  summaryRow,
  type ApiSummaryRow,
} from './event-mapping.ts';
import type { ArrivalRequest, EventStore, InsertResult, ListQuery, NewEvent, StoredEvent } from './event-store.ts';
import {
  buildListSql,
  receivedAtUtc,
  resolveListQuery,
  type ListPosition,
  type ResolvedListQuery,
} from './list-query.ts';
import { runSearch } from './search-query.ts';
import { lookUpNearIdTime } from './id-time-bound.ts';
import { microsFromRfc3339 } from './timestamps.ts';
import { storable, storableOrNull } from './storable-text.ts';

export interface PgEventStore extends EventStore {
  /** The newest events, as the recent-events resource shows them. */
  recent(limit?: number): Promise<EventSummary[]>;
}

/**
 * insertMany writes a batch in one statement up to these sizes and splits beyond them: the
 * payloads travel as one binary bytea[] parameter, and a PostgreSQL protocol message is capped at
 * 1 GB, well above the payload bound kept here to limit the memory one statement pins.
 */
export const MAX_STATEMENT_EVENTS = 1_000;
export const MAX_STATEMENT_PAYLOAD_BYTES = 64 * 1024 * 1024;

const insertedRow = summaryRow.extend({ ord: z.number().int(), duplicate: z.boolean() });
type InsertedRow = z.infer<typeof insertedRow>;

const positionRow = z.object({ id: z.string(), received_at_utc: z.string() });

const EVENT_RECEIVED_AT = sql.fragment`events.received_at`;

/** The unique key a provider's retry collides with (migration 0011). */
const EXTERNAL_ID_KEY = 'event_external_ids_pkey';

function storableHeaders(headers: EventHeaders): string {
  const entries: Array<[string, string | string[]]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') {
      entries.push([storable(name), storable(value)]);
    } else if (Array.isArray(value)) {
      const values = value.filter((item) => typeof item === 'string').map(storable);
      // The contract's shape: one value is a string, several are a list; an empty list is no header.
      if (values.length === 1 && values[0] !== undefined) entries.push([storable(name), values[0]]);
      else if (values.length > 1) entries.push([storable(name), values]);
    }
  }
  // fromEntries defines own properties, so even a header named __proto__ is kept as data.
  return JSON.stringify(Object.fromEntries(entries));
}

function checkNewEvent(event: NewEvent, index: number): void {
  const fail = (message: string): never => {
    throw invalidArgument(`event ${index}: ${message}`);
  };
  const provider = EVENT_PROVIDER_LIMITS;
  if (
    typeof event.provider !== 'string' ||
    event.provider.length < provider.minLength ||
    event.provider.length > provider.maxLength
  ) {
    fail(`provider must be ${provider.minLength} to ${provider.maxLength} characters`);
  }
  if (typeof event.eventType !== 'string' || event.eventType.length > EVENT_TYPE_LIMITS.maxLength)
    fail(`event_type must be at most ${EVENT_TYPE_LIMITS.maxLength} characters`);
  if (typeof event.verifyDetail !== 'string') fail('verify_detail must be a string');
  for (const [field, value] of [
    ['external_id', event.externalId],
    ['content_type', event.contentType],
    ['source_ip', event.sourceIp],
  ] as const) {
    if (value !== null && typeof value !== 'string') fail(`${field} must be a string or null`);
  }
  if (!(TRUST_MODES as readonly string[]).includes(event.trustMode))
    fail(`trust_mode must be one of ${TRUST_MODES.join(', ')}`);
  if (event.verified && event.trustMode !== 'signed') fail('only a signed event can be verified');
  if (event.passedCheck !== undefined) {
    if (!isCheckedTrustMode(event.trustMode)) fail('only a signed or token event has a check that passed or failed');
    if (event.trustMode === 'signed' && event.passedCheck !== event.verified) {
      fail("a signed event's check outcome is its verified flag");
    }
  }
  if (!Buffer.isBuffer(event.payload)) fail('payload must be a Buffer');
  if (
    event.receivedSize !== undefined &&
    !(Number.isInteger(event.receivedSize) && event.receivedSize > event.payload.length)
  ) {
    fail('received_size, when set, must be larger than the stored payload');
  }
  if (typeof event.headers !== 'object' || event.headers === null) fail('headers must be an object');
  if (event.summary !== undefined && event.summary !== null) {
    const { minLength, maxLength } = EVENT_SUMMARY_LIMITS;
    const length = typeof event.summary === 'string' ? [...event.summary].length : -1;
    if (length < minLength || length > maxLength) fail(`summary must be ${minLength} to ${maxLength} characters`);
  }
  if (event.request !== undefined) checkRequest(event.request, fail);
}

function checkRequest(request: ArrivalRequest, fail: (message: string) => never): void {
  for (const [field, value, limits] of [
    ['method', request.method, EVENT_REQUEST_METHOD_LIMITS],
    ['path', request.path, EVENT_REQUEST_PATH_LIMITS],
    ['query', request.query, { minLength: 0, ...EVENT_REQUEST_QUERY_LIMITS }],
  ] as const) {
    if (typeof value !== 'string' || value.length < limits.minLength || value.length > limits.maxLength) {
      fail(`request ${field} must be ${limits.minLength} to ${limits.maxLength} characters`);
    }
  }
  if (!isHttpStatus(request.responseStatus)) fail(`request response status must be ${HTTP_STATUS_TEXT}`);
}

const { minimum: LOWEST_STATUS, maximum: HIGHEST_STATUS } = EVENT_RESPONSE_STATUS_LIMITS;
const HTTP_STATUS_TEXT = `an HTTP status (${LOWEST_STATUS} to ${HIGHEST_STATUS})`;
const isHttpStatus = (status: unknown): boolean =>
  typeof status === 'number' && Number.isInteger(status) && status >= LOWEST_STATUS && status <= HIGHEST_STATUS;

/** What goes in passed_check: the outcome, with the defaults NewEvent documents made explicit. */
function passedCheckToStore(event: NewEvent): boolean | null {
  if (!isCheckedTrustMode(event.trustMode)) return null;
  return event.passedCheck ?? (event.trustMode === 'signed' ? event.verified : false);
}

const sameKey = (provider: string, externalId: string): string => `${provider}\u0000${externalId}`;

function statementChunks<T extends { event: NewEvent }>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = item.event.payload.length;
    if (current.length > 0 && (current.length >= MAX_STATEMENT_EVENTS || bytes + size > MAX_STATEMENT_PAYLOAD_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export interface EventStoreOptions {
  /**
   * Forwarding's outbox: the names of the forward rules that take this event. Each gets a delivery
   * row written in the same statement as the event. Absent (or no match), the insert is unchanged.
   */
  forwardRulesFor?: (event: NewEvent) => readonly string[];
  /** How long a payload search (q, match) may run before it answers invalid_argument (api.search_timeout_ms). */
  searchTimeoutMs?: number;
}

// Over 80 lines: a repository: one closure over the pool and its prepared limits whose methods are
// each one statement; its length is their number.
export function createEventStore(pool: DatabasePool, options: EventStoreOptions = {}): PgEventStore {
  assertStorePool(pool);
  const { forwardRulesFor } = options;
  const { searchTimeoutMs } = options;

  /**
   * One INSERT … SELECT FROM unnest(…) for the batch, answering the rows it inserted; a row that
   * collided with a stored delivery is simply absent. The statement is kept this plain on purpose:
   * it runs for every group commit, and PostgreSQL plans it in a tenth of a millisecond where a
   * version that also looked up the duplicates took two.
   */
  async function insertRows(
    events: ReadonlyArray<{ ord: number; event: NewEvent }>,
  ): Promise<Map<number, InsertedRow>> {
    const ids = events.map(() => uuidv7());
    const providers = events.map(({ event }) => storable(event.provider));
    const eventTypes = events.map(({ event }) => storable(event.eventType));
    // One array parameter per column: unnest turns them back into rows.
    const column = (
      value: (event: NewEvent) => string | number | boolean | null,
      type: 'text' | 'bool' | 'int2' | 'int4' | 'jsonb',
    ) =>
      sql.array(
        events.map(({ event }) => value(event)),
        type,
      );
    const insert = sql.fragment`
      INSERT INTO events (id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id, content_type, source_ip, headers, payload, received_size,
        summary, request_method, request_path, request_query, response_status)
      SELECT * FROM unnest(
        ${sql.array(ids, 'uuid')},
        ${sql.array(providers, 'text')},
        ${sql.array(eventTypes, 'text')},
        ${column((event) => event.trustMode, 'text')},
        ${column((event) => event.verified, 'bool')},
        ${column(passedCheckToStore, 'bool')},
        ${column((event) => storable(event.verifyDetail), 'text')},
        ${column((event) => storableOrNull(event.externalId), 'text')},
        ${column((event) => storableOrNull(event.contentType), 'text')},
        ${column((event) => storableOrNull(event.sourceIp), 'text')},
        ${column((event) => storableHeaders(event.headers), 'jsonb')},
        ${sql.binary(encodeByteaArray(events.map(({ event }) => event.payload)))}::bytea[],
        ${column((event) => event.receivedSize ?? null, 'int4')},
        ${column((event) => storableOrNull(event.summary ?? null), 'text')},
        ${column((event) => storableOrNull(event.request?.method ?? null), 'text')},
        ${column((event) => storableOrNull(event.request?.path ?? null), 'text')},
        ${column((event) => storableOrNull(event.request?.query ?? null), 'text')},
        ${column((event) => event.request?.responseStatus ?? null, 'int2')}
      ) AS input(id, provider, event_type, trust_mode, verified, passed_check, verify_detail, external_id)
      -- A retry of a stored delivery: its key is in event_external_ids (written by the insert
      -- trigger, since a partitioned table cannot hold a unique key without received_at).
      WHERE input.external_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM event_external_ids
        WHERE event_external_ids.provider = input.provider AND event_external_ids.external_id = input.external_id
      )
      RETURNING events.id, events.received_at, ${receivedAtUtc('events')} AS received_at_utc
    `;
    // The outbox: a delivery row per matching forward rule, in the same statement (so the same
    // transaction) as its event; an event that collided with a stored one queues nothing new.
    const deliveries = forwardRulesFor
      ? events.flatMap(({ event }, index) => forwardRulesFor(event).map((rule) => [uuidv7(), ids[index] ?? '', rule]))
      : [];
    const queue =
      deliveries.length === 0
        ? sql.fragment``
        : sql.fragment`, queued AS (
            INSERT INTO deliveries (id, event_id, event_received_at, rule)
            SELECT queue.id, queue.event_id, inserted.received_at, queue.rule
            FROM ${sql.unnest(deliveries, ['uuid', 'uuid', 'text'])} AS queue(id, event_id, rule)
            JOIN inserted ON inserted.id = queue.event_id
          )`;
    // Every insert announces the events it newly stores (announcement.ts): the one way readers and
    // other instances hear of them.
    let rows: readonly z.infer<typeof positionRow>[];
    try {
      rows = await pool.any(sql.type(positionRow)`
        WITH inserted AS (${insert})${queue}
        SELECT inserted.id, inserted.received_at_utc FROM inserted ${ANNOUNCE_INSERTED}
      `);
    } catch (error) {
      // A concurrent transaction stored the same delivery after this statement's snapshot: the
      // key trigger refused the batch, and the caller looks the stored event up and inserts the rest.
      if (error instanceof UniqueIntegrityConstraintViolationError && error.constraint === EXTERNAL_ID_KEY) {
        return new Map();
      }
      throw error;
    }
    const receivedAt = new Map(rows.map((row) => [row.id, row.received_at_utc]));
    const inserted = new Map<number, InsertedRow>();
    events.forEach(({ ord, event }, index) => {
      const id = ids[index];
      const at = id === undefined ? undefined : receivedAt.get(id);
      // Absent from RETURNING: it collided with a stored delivery.
      if (id === undefined || at === undefined) return;
      inserted.set(ord, {
        ord,
        duplicate: false,
        id,
        provider: providers[index] ?? storable(event.provider),
        event_type: eventTypes[index] ?? storable(event.eventType),
        trust_mode: event.trustMode,
        verified: event.verified,
        payload_size: event.payload.length,
        received_at_utc: at,
      });
    });
    return inserted;
  }

  /**
   * A conflicting row committed by a concurrent transaction after our statement began is invisible
   * to that statement's snapshot; a fresh statement sees it.
   */
  async function findStored(
    events: ReadonlyArray<{ ord: number; event: NewEvent }>,
  ): Promise<Map<number, InsertedRow>> {
    const tuples = events.map(({ ord, event }) => [ord, storable(event.provider), storableOrNull(event.externalId)]);
    const rows = await pool.any(sql.type(insertedRow)`
      SELECT input.ord, true AS duplicate, events.id, events.provider, events.event_type, events.trust_mode,
        events.verified, events.payload_size, ${receivedAtUtc('events')} AS received_at_utc
      FROM ${sql.unnest(tuples, ['int4', 'text', 'text'])} AS input(ord, provider, external_id)
      JOIN event_external_ids ON event_external_ids.provider = input.provider
        AND event_external_ids.external_id = input.external_id
      JOIN events ON events.id = event_external_ids.event_id AND events.received_at = event_external_ids.received_at
    `);
    return new Map(rows.map((row) => [row.ord, row]));
  }

  async function insertMany(events: readonly NewEvent[]): Promise<InsertResult[]> {
    if (events.length === 0) return [];
    events.forEach(checkNewEvent);

    // A retry inside the same batch refers to the first occurrence; only that one is written.
    const firstByKey = new Map<string, number>();
    const firstOf: number[] = events.map((event, ord) => {
      if (event.externalId === null) return ord;
      const key = sameKey(storable(event.provider), storable(event.externalId));
      const first = firstByKey.get(key);
      if (first !== undefined) return first;
      firstByKey.set(key, ord);
      return ord;
    });

    const results = new Map<number, InsertedRow>();
    const firsts = events.map((event, ord) => ({ ord, event })).filter(({ ord }) => firstOf[ord] === ord);
    for (const chunk of statementChunks(firsts)) {
      let pending = chunk;
      for (let attempt = 0; attempt < 3 && pending.length > 0; attempt += 1) {
        for (const [ord, row] of await insertRows(pending)) results.set(ord, row);
        pending = pending.filter(({ ord }) => !results.has(ord));
        if (pending.length === 0) break;
        for (const [ord, row] of await findStored(pending)) results.set(ord, row);
        // Still missing: the row we collided with was deleted meanwhile (retention), so insert again.
        pending = pending.filter(({ ord }) => !results.has(ord));
      }
      if (pending.length > 0) throw new Error(`could not store or find ${pending.length} event(s) after retries`);
    }

    return events.map((_event, ord) => {
      const first = firstOf[ord] ?? ord;
      const row = results.get(first);
      if (!row) throw new Error(`no result for event ${ord}`);
      return { event: summaryFromRow(row), duplicate: row.duplicate || first !== ord };
    });
  }

  /** The position of the event a since or until names; invalid_argument when there is none. */
  async function positionOf(eventId: string, field: 'since' | 'until'): Promise<ListPosition> {
    const row = await lookUpNearIdTime(EVENT_RECEIVED_AT, eventId, (near) =>
      pool.maybeOne(sql.type(positionRow)`
        SELECT events.id, ${receivedAtUtc('events')} AS received_at_utc FROM events
        WHERE events.id = ${eventId} AND ${near}
      `),
    );
    if (!row) throw invalidArgument(`${field}: no event with id ${eventId}`);
    return { receivedAt: row.received_at_utc, id: row.id };
  }

  async function resolveBounds(resolved: ResolvedListQuery): Promise<ResolvedListQuery> {
    const { since, until } = resolved;
    const [after, upTo] = await Promise.all([
      since !== null && 'eventId' in since ? positionOf(since.eventId, 'since') : null,
      until !== null && 'eventId' in until ? positionOf(until.eventId, 'until') : null,
    ]);
    return { ...resolved, after, upTo };
  }

  /** One page in the list order, each row made into the caller's shape. */
  async function listPage<T>(
    query: ListQuery,
    shape: (row: ApiSummaryRow) => T,
  ): Promise<{ events: T[]; next_cursor?: string }> {
    const resolved = await resolveBounds(resolveListQuery(query));
    const listSql = buildListSql(resolved);
    const searching = resolved.q !== null || resolved.match !== null;
    const rows = searching ? await runSearch(pool, listSql, searchTimeoutMs) : await pool.any(listSql);
    const page = rows.slice(0, resolved.limit);
    const last = page.at(-1);
    if (rows.length <= resolved.limit || !last) return { events: page.map(shape) };
    const micros = microsFromRfc3339(last.received_at_utc);
    if (micros === null) throw new Error(`unexpected received_at ${last.received_at_utc}`);
    return {
      events: page.map(shape),
      next_cursor: encodeCursor({ receivedAtMicros: micros, id: last.id, fingerprint: resolved.fingerprint }),
    };
  }

  const list = (query: ListQuery): Promise<ListWebhookEventsOutput> => listPage(query, summaryFromRow);

  return {
    async insert(event: NewEvent): Promise<InsertResult> {
      const [result] = await insertMany([event]);
      if (!result) throw new Error('insert returned no result');
      return result;
    },

    insertMany,

    async get(id: string): Promise<StoredEvent | null> {
      const uuid = normalizeEventId(id);
      if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
      const row = await lookUpNearIdTime(EVENT_RECEIVED_AT, uuid, (near) =>
        pool.maybeOne(sql.type(detailRow)`
        SELECT events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
          ${receivedAtUtc('events')} AS received_at_utc, events.passed_check, events.received_size, events.verify_detail, events.external_id, events.content_type,
          events.source_ip, events.headers, events.payload, events.summary,
          events.request_method, events.request_path, events.request_query, events.response_status
        FROM events
        WHERE events.id = ${uuid} AND ${near}
      `),
      );
      return row ? storedEventFromRow(row) : null;
    },

    list,

    listWithSummaries: (query: ListQuery): Promise<ApiEventList> => listPage(query, apiSummaryFromRow),

    async providerHasEvents(provider: string): Promise<boolean> {
      return pool.oneFirst(sql.type(z.object({ found: z.boolean() }))`
        SELECT EXISTS (SELECT 1 FROM events WHERE events.provider = ${provider}) AS found
      `);
    },

    async summaries(ids: readonly string[]): Promise<ApiEventSummary[]> {
      if (ids.length === 0) return [];
      const uuids = ids.map((id) => {
        const uuid = normalizeEventId(id);
        if (uuid === null) throw invalidArgument('ids must be event ids (UUIDs)');
        return uuid;
      });
      const rows = await pool.any(sql.type(apiSummaryRow)`
        SELECT events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
          ${receivedAtUtc('events')} AS received_at_utc, events.summary
        FROM events
        WHERE events.id = ANY(${sql.array([...new Set(uuids)], 'uuid')})
      `);
      const byId = new Map(rows.map((row) => [row.id, apiSummaryFromRow(row)]));
      return uuids.flatMap((id) => {
        const summary = byId.get(id);
        return summary ? [summary] : [];
      });
    },

    async recordResponseStatus(id: string, status: number): Promise<void> {
      const uuid = normalizeEventId(id);
      if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
      if (!isHttpStatus(status)) throw invalidArgument(`status must be ${HTTP_STATUS_TEXT}`);
      // Only a row that recorded a request has an answer to correct (queue messages have none).
      await pool.query(sql.unsafe`
        UPDATE events SET response_status = ${status} WHERE id = ${uuid} AND response_status IS NOT NULL
      `);
    },

    async recent(limit?: number): Promise<EventSummary[]> {
      return (await list({ limit })).events;
    },
  };
}
