/**
 * Reading events page by page in the list order: the query resolved (since/until naming an event
 * become positions), the statements (a few partitions at a time, or a search under its time
 * limit), and the cursor to the next page.
 */
import { sql, type DatabasePool } from 'slonik';
import type { ApiEventList, ListWebhookEventsOutput } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { encodeCursor } from './cursor.ts';
import { apiSummaryFromRow, positionRow, summaryFromRow, type ApiSummaryRow } from './event-mapping.ts';
import type { ListQuery } from './event-store.ts';
import {
  buildListSql,
  receivedAtUtc,
  resolveListQuery,
  searchParts,
  type ListPosition,
  type ResolvedListQuery,
} from './list-statement.ts';
import { runSearch, searchRest } from './search-query.ts';
import { microsFromRfc3339 } from '../sql/timestamps.ts';
import { lookUpNearIdTime } from '../sql/id-time-bound.ts';
import { createTimeline, walkPartitions } from './partition-walk.ts';

/** Plain functions over the pool (no `this`): the store hands them on as its methods. */
export interface EventPages {
  list: (query: ListQuery) => Promise<ListWebhookEventsOutput>;
  listWithSummaries: (query: ListQuery) => Promise<ApiEventList>;
}

/** searchTimeoutMs: how long a payload search (q, match) may run (api.search_timeout_ms). */
export function createEventPages(pool: DatabasePool, searchTimeoutMs: number | undefined): EventPages {
  const timeline = createTimeline(pool);
  /** The position of the event a since or until names; invalid_argument when there is none. */
  async function positionOf(eventId: string, field: 'since' | 'until'): Promise<ListPosition> {
    const row = await lookUpNearIdTime(sql.fragment`events.received_at`, eventId, (near) =>
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
    const searching = resolved.q !== null || resolved.match !== null;
    const slices = await timeline();
    // A search walks the partitions as a list does: each statement plans and reads only its group.
    // Past its first group, a search takes the rest of the range in two statements (searchRest).
    const rows = searching
      ? await runSearch(
          pool,
          (read) =>
            walkPartitions(
              slices,
              resolved,
              (bounded) => read(buildListSql(bounded)),
              (bounded, first) => searchRest(read, searchParts(bounded), searchParts(first)),
            ),
          searchTimeoutMs,
        )
      : await walkPartitions(slices, resolved, (bounded) => pool.any(buildListSql(bounded)));
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

  return {
    list: (query) => listPage(query, summaryFromRow),
    listWithSummaries: (query) => listPage(query, apiSummaryFromRow),
  };
}
