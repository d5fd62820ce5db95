/**
 * The EventStore on PostgreSQL: writing (event-insert.ts, the hot path), reading pages in the list
 * order (event-pages.ts), and the single-event statements here.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ApiEventSummary, EventReply, EventSummary } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { assertStorePool } from '../database/database.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import {
  apiSummaryFromRow,
  apiSummaryRow,
  eventRow,
  replyFromRow,
  storedEventFromRow,
  summaryFromRow,
  type SummaryFields,
} from './event-mapping.ts';
import { createEventInsert } from './event-insert.ts';
import { createEventPages } from './event-pages.ts';
import { lookUpNearIdTime } from '../sql/id-time-bound.ts';
import type { EventStore, InsertResult, NewEvent, StoredEvent } from './event-store.ts';
import { receivedAtUtc } from './list-statement.ts';
import { HTTP_STATUS_TEXT, isHttpStatus } from './new-event-check.ts';

export interface PgEventStore extends EventStore {
  /** The newest events, as the recent-events resource shows them. */
  recent(limit?: number): Promise<EventSummary[]>;
  /** The given events as the serve terminal shows them, in the order given, skipping unknown ids. */
  arrivals(ids: readonly string[]): Promise<Arrival[]>;
}

/** An event as the serve terminal shows it: its summary fields and what its sender was answered. */
export interface Arrival extends SummaryFields {
  /** The status ingest answered; null for queue messages, which had no request. */
  responseStatus: number | null;
}

const arrivalRow = apiSummaryRow.extend({ response_status: z.number().int().nullable() });

/** The ids as the store keys them (each checked), without repeats. */
function uniqueEventIds(ids: readonly string[]): string[] {
  const uuids = ids.map((id) => {
    const uuid = normalizeEventId(id);
    if (uuid === null) throw invalidArgument('ids must be event ids (UUIDs)');
    return uuid;
  });
  return [...new Set(uuids)];
}

/** What was found for each id, in the order of the ids; unknown ones are skipped. */
function inOrder<T>(ids: readonly string[], found: ReadonlyMap<string, T>): T[] {
  return ids.flatMap((id) => {
    const normal = normalizeEventId(id);
    const item = normal === null ? undefined : found.get(normal);
    return item === undefined ? [] : [item];
  });
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

/** Records how an event's reply attempt ended (migration 0020), looked up near its id's time first. */
async function recordReply(pool: DatabasePool, id: string, reply: EventReply): Promise<void> {
  const uuid = normalizeEventId(id);
  if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
  await lookUpNearIdTime(sql.fragment`events.received_at`, uuid, (near) =>
    pool.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
      UPDATE events SET reply_outcome = ${reply.outcome}, reply_status = ${reply.response_status ?? null},
        reply_ms = ${reply.response_ms}
      WHERE events.id = ${uuid} AND ${near}
      RETURNING events.id
    `),
  );
}

export function createEventStore(pool: DatabasePool, options: EventStoreOptions = {}): PgEventStore {
  assertStorePool(pool);
  const insertMany = createEventInsert(pool, options.forwardRulesFor);
  const pages = createEventPages(pool, options.searchTimeoutMs);
  /** The summary rows of the given events (the live stream's and the serve terminal's), in no order. */
  const rowsOf = async (ids: readonly string[]): Promise<readonly z.infer<typeof arrivalRow>[]> =>
    ids.length === 0
      ? []
      : pool.any(sql.type(arrivalRow)`
        SELECT events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
          ${receivedAtUtc('events')} AS received_at_utc, events.summary, events.response_status
        FROM events
        WHERE events.id = ANY(${sql.array(uniqueEventIds(ids), 'uuid')})
      `);

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
      const row = await lookUpNearIdTime(sql.fragment`events.received_at`, uuid, (near) =>
        pool.maybeOne(sql.type(eventRow)`
        SELECT events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
          ${receivedAtUtc('events')} AS received_at_utc, events.passed_check, events.received_size, events.verify_detail, events.external_id, events.content_type,
          events.source_ip, events.headers, events.payload, events.summary,
          events.request_method, events.request_path, events.request_query, events.response_status, events.handshake,
          events.reply_outcome, events.reply_status, events.reply_ms
        FROM events
        WHERE events.id = ${uuid} AND ${near}
      `),
      );
      return row === null ? null : { ...storedEventFromRow(row), ...replyFromRow(row) };
    },

    list: pages.list,

    listWithSummaries: pages.listWithSummaries,

    async providerHasEvents(provider: string): Promise<boolean> {
      return pool.oneFirst(sql.type(z.object({ found: z.boolean() }))`
        SELECT EXISTS (SELECT 1 FROM events WHERE events.provider = ${provider}) AS found
      `);
    },

    async summaries(ids: readonly string[]): Promise<ApiEventSummary[]> {
      const rows = await rowsOf(ids);
      return inOrder(ids, new Map(rows.map((row) => [row.id, apiSummaryFromRow(row)])));
    },

    async arrivals(ids: readonly string[]): Promise<Arrival[]> {
      const rows = await rowsOf(ids);
      const arrivals = rows.map((row) => ({ ...summaryFromRow(row), responseStatus: row.response_status }));
      return inOrder(ids, new Map(arrivals.map((arrival) => [arrival.id, arrival])));
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

    recordReply: (id, reply) => recordReply(pool, id, reply),

    async recent(limit?: number): Promise<EventSummary[]> {
      return (await pages.list({ limit })).events;
    },
  };
}
