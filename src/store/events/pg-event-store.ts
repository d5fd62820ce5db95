/**
 * The EventStore on PostgreSQL: writing (event-insert.ts, the hot path), reading pages in the list
 * order (event-pages.ts), and the single-event statements here.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ApiEventSummary, EventSummary } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { assertStorePool } from '../database/database.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import { apiSummaryFromRow, apiSummaryRow, detailRow, storedEventFromRow } from './event-mapping.ts';
import { createEventInsert } from './event-insert.ts';
import { createEventPages } from './event-pages.ts';
import { lookUpNearIdTime } from '../sql/id-time-bound.ts';
import type { EventStore, InsertResult, NewEvent, StoredEvent } from './event-store.ts';
import { receivedAtUtc } from './list-statement.ts';
import { HTTP_STATUS_TEXT, isHttpStatus } from './new-event-check.ts';

export interface PgEventStore extends EventStore {
  /** The newest events, as the recent-events resource shows them. */
  recent(limit?: number): Promise<EventSummary[]>;
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

export function createEventStore(pool: DatabasePool, options: EventStoreOptions = {}): PgEventStore {
  assertStorePool(pool);
  const insertMany = createEventInsert(pool, options.forwardRulesFor);
  const pages = createEventPages(pool, options.searchTimeoutMs);

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
        pool.maybeOne(sql.type(detailRow)`
        SELECT events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
          ${receivedAtUtc('events')} AS received_at_utc, events.passed_check, events.received_size, events.verify_detail, events.external_id, events.content_type,
          events.source_ip, events.headers, events.payload, events.summary,
          events.request_method, events.request_path, events.request_query, events.response_status, events.handshake
        FROM events
        WHERE events.id = ${uuid} AND ${near}
      `),
      );
      return row ? storedEventFromRow(row) : null;
    },

    list: pages.list,

    listWithSummaries: pages.listWithSummaries,

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
      return (await pages.list({ limit })).events;
    },
  };
}
