/**
 * Reading events page by page in the list order: the query resolved (since/until naming an event
 * become positions), one statement (a search under its time limit), and the cursor to the next page.
 */
import { sql, type DatabasePool } from 'slonik';
import type { ApiEventList, ListWebhookEventsOutput } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { encodeCursor } from './cursor.ts';
import { apiSummaryFromRow, positionRow, summaryFromRow, type ApiSummaryRow } from './event-mapping.ts';
import type { ListQuery } from './event-store.ts';
import {
  buildListSql,
  receivedAtUtc,
  resolveListQuery,
  type ListPosition,
  type ResolvedListQuery,
} from './list-query.ts';
import { runSearch } from './search-query.ts';
import { microsFromRfc3339 } from './timestamps.ts';
import { lookUpNearIdTime } from './id-time-bound.ts';

/**
 * How far back a newest-first page looks first, before its upper end: a day, then a week. With
 * time partitions, a page without a lower time bound would plan and start every partition's index
 * scan, most of which it never reads; bounded to a recent window it touches one or two. Any window
 * that yields more rows than the page holds has found exactly the newest ones (every row outside
 * it is older), so the answer is the same; one that yields fewer is tried again without it.
 */
const RECENT_WINDOWS_MS = [24 * 3_600_000, 7 * 24 * 3_600_000] as const;

/** Plain functions over the pool (no `this`): the store hands them on as its methods. */
export interface EventPages {
  list: (query: ListQuery) => Promise<ListWebhookEventsOutput>;
  listWithSummaries: (query: ListQuery) => Promise<ApiEventList>;
}

/** searchTimeoutMs: how long a payload search (q, match) may run (api.search_timeout_ms). */
const timeOf = (bound: ResolvedListQuery['since']): string | null =>
  bound !== null && 'time' in bound ? bound.time : null;

export function createEventPages(pool: DatabasePool, searchTimeoutMs: number | undefined): EventPages {
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

  /** The rows of a list page (limit + 1 at most), looking in recent windows first (RECENT_WINDOWS_MS). */
  async function listRows(
    resolved: ResolvedListQuery,
    listSql: ReturnType<typeof buildListSql>,
  ): Promise<readonly ApiSummaryRow[]> {
    if (resolved.order !== 'newest_first') return pool.any(listSql);
    // The page's upper end, as near as it is known; any value gives the same answer (see above).
    const upper = Math.min(
      Date.now(),
      ...[resolved.cursor?.receivedAt, resolved.upTo?.receivedAt, resolved.to, timeOf(resolved.until)]
        .map((at) => (at === null || at === undefined ? NaN : Date.parse(at)))
        .filter((ms) => Number.isFinite(ms)),
    );
    const lowest = Math.max(
      ...[resolved.from, resolved.after?.receivedAt, timeOf(resolved.since)]
        .map((at) => (at === null || at === undefined ? NaN : Date.parse(at)))
        .filter((ms) => Number.isFinite(ms)),
      -Infinity,
    );
    for (const windowMs of RECENT_WINDOWS_MS) {
      const edge = upper - windowMs;
      // The query's own lower bound is already as narrow: the window adds nothing.
      if (edge <= lowest) break;
      const rows = await pool.any(buildListSql({ ...resolved, from: new Date(edge).toISOString() }));
      if (rows.length > resolved.limit) return rows;
    }
    return pool.any(listSql);
  }

  /** One page in the list order, each row made into the caller's shape. */
  async function listPage<T>(
    query: ListQuery,
    shape: (row: ApiSummaryRow) => T,
  ): Promise<{ events: T[]; next_cursor?: string }> {
    const resolved = await resolveBounds(resolveListQuery(query));
    const listSql = buildListSql(resolved);
    const searching = resolved.q !== null || resolved.match !== null;
    const rows = searching ? await runSearch(pool, listSql, searchTimeoutMs) : await listRows(resolved, listSql);
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
