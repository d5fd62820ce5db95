/**
 * A payload search (q, match) as SQL whose cost follows the events it finds, not the size of the
 * table, whatever the planner's statistics say.
 *
 * Left to itself the planner picks between two plans from its estimate of how many events match:
 * walking the received_at index and probing each event's search row (right for a common term:
 * the first page is found after a few rows), or collecting the GIN index's matches and sorting
 * them (right for a rare one). A term missing from its statistics (an OR of rare words, anything
 * after a bulk insert that autovacuum has not analysed yet) is estimated at up to 1% of the table,
 * so it was walked: 100,077 probes at 100,000 events for `zq0 or zq1`, which matches nothing.
 *
 * So the statement measures instead of estimating, in three steps, each run only if the one
 * before it did not settle the page (an uncorrelated condition becomes a one-time filter, so a
 * skipped step costs nothing):
 *
 * 1. Walk the newest RECENT_ROWS_PER_ROW × (limit + 1) events that pass the other filters and
 *    probe their search rows. If that finds the page, or those were all the events there are,
 *    the page is complete: a common or recent term costs at most that walk.
 * 2. Otherwise the term is rare here; collect its matches from the GIN index, at most
 *    MAX_CANDIDATES + 1 of them. If they are at most MAX_CANDIDATES, join them to events, filter
 *    and sort: the cost follows the matches.
 * 3. Otherwise (many matches, none of them recent) walk on until the page is full; the walk
 *    finds it after about (limit + 1) × table size / matches rows.
 *
 * Every shape is forced by the SQL itself, except the GIN scan of step 2, which a LIMIT tempts
 * the planner to replace with a sequential scan; the search runs with enable_seqscan off (see
 * SEARCH_SETTINGS) so that a misjudged term cannot read the whole table. Events still queued for
 * the indexer are matched on the fly as before (one lookup per queued event) and merged in.
 */
import { sql, StatementTimeoutError, type DatabasePool, type FragmentSqlToken, type QuerySqlToken } from 'slonik';
import { z, type ZodTypeAny } from 'zod';
import { SEARCH_TIMEOUT_MS } from '../../../generated/constants.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { apiSummaryRow, type ApiSummaryRow } from './event-mapping.ts';
import { microsFromRfc3339, rfc3339FromMicros, utcText } from '../sql/timestamps.ts';

/**
 * Step 1 walks this many events per row of the page (51 rows: 1,020 events).
 * @internal outside src/, only tests or benches use it
 */
export const RECENT_ROWS_PER_ROW = 20;

/**
 * Step 2 takes the GIN index's matches when there are at most this many.
 * @internal outside src/, only tests or benches use it
 */
export const MAX_CANDIDATES = 8_000;

/**
 * The search's own transaction settings (SET LOCAL, gone at its end):
 * - a statement timeout, so no search holds a connection for long whatever it asks for;
 * - no JIT: compiling costs tens to hundreds of milliseconds, and stale statistics (a bulk
 *   insert autovacuum has not analysed yet) made every search's estimated cost cross the JIT
 *   threshold, adding 340 ms to searches that take a few;
 * - no sequential scans: every step of the search has an index path, and a sequential scan is
 *   only ever chosen on a wrong estimate (see above).
 * @internal outside src/, only tests or benches use it
 */
export function searchSettings(timeoutMs: number): QuerySqlToken {
  return sql.unsafe`
    SELECT set_config('statement_timeout', ${String(Math.max(1, Math.round(timeoutMs)))}, true),
      set_config('jit', 'off', true),
      set_config('enable_seqscan', 'off', true)
  `;
}

/** The statements of one search, each run by `read` in the search's transaction. */
export type SearchReader = <T extends ZodTypeAny>(query: QuerySqlToken<T>) => Promise<ReadonlyArray<z.infer<T>>>;

function searchTimedOut(timeoutMs: number): Error {
  return invalidArgument(
    `the search (q, match) took longer than its limit of ${timeoutMs} ms (api.search_timeout_ms) and was stopped: ` +
      'too costly for this many events. Narrow it with provider, event_type or a time range (since/until, ' +
      'from/to), or search for rarer words',
  );
}

/**
 * Runs a search under searchSettings: `search` reads its page with one statement per group of
 * partitions (partition-walk.ts), all in one transaction. The limit is the whole search's: each
 * statement after the first gets what is left of it. Hitting it is the caller's to fix (a rarer
 * term, a provider, a time range), so it answers invalid_argument, saying so.
 */
export async function runSearch<T>(
  pool: DatabasePool,
  search: (read: SearchReader) => Promise<T>,
  timeoutMs: number = SEARCH_TIMEOUT_MS.default,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  try {
    return await pool.transaction(async (transaction) => {
      await transaction.query(searchSettings(timeoutMs));
      let statements = 0;
      const read: SearchReader = async (query) => {
        if (statements > 0) {
          const left = deadline - Date.now();
          if (left <= 0) throw searchTimedOut(timeoutMs);
          await transaction.query(sql.unsafe`SELECT set_config('statement_timeout', ${String(Math.ceil(left))}, true)`);
        }
        statements += 1;
        return transaction.any(query);
      };
      return search(read);
    });
  } catch (error) {
    if (!(error instanceof StatementTimeoutError)) throw error;
    throw searchTimedOut(timeoutMs);
  }
}

/** The part of a list query a search needs from list-statement.ts. */
export interface SearchParts {
  /** The filters other than the payload search (provider, type, bounds, cursor, verified). */
  conditions: readonly FragmentSqlToken[];
  /** The listed columns of `events`. */
  columns: FragmentSqlToken;
  direction: FragmentSqlToken;
  /** The page size plus one. */
  limit: number;
  /**
   * The query's received_at range [from, to), also among `conditions`. Named here so that the
   * search rows are bounded by it too: with constant bounds the planner prunes both tables to the
   * partitions of the range, which is how a search reads a group of partitions at a time.
   */
  from: string | null;
  to: string | null;
  q: string | null;
  match: string | null;
}

function whereAll(conditions: readonly FragmentSqlToken[]): FragmentSqlToken {
  return conditions.length === 0 ? sql.fragment`` : sql.fragment`WHERE ${sql.join(conditions, sql.fragment` AND `)}`;
}

/**
 * The range again, on a column a join or probe reads by key: without it that read is planned over
 * every partition, however narrow the range.
 */
function rangeOn(parts: SearchParts, column: FragmentSqlToken): FragmentSqlToken {
  const bounds: FragmentSqlToken[] = [];
  if (parts.from !== null) bounds.push(sql.fragment`${column} >= ${parts.from}::timestamptz`);
  if (parts.to !== null) bounds.push(sql.fragment`${column} < ${parts.to}::timestamptz`);
  return bounds.length === 0 ? sql.fragment`` : sql.fragment`AND ${sql.join(bounds, sql.fragment` AND `)}`;
}

/** Events still queued for the indexer, matched on the fly (one lookup per queued event), in order. */
function queuedBranch(parts: SearchParts, pending: readonly FragmentSqlToken[]): FragmentSqlToken {
  const { columns, direction, limit } = parts;
  return sql.fragment`(
    SELECT queued.*
    FROM event_search_queue
    CROSS JOIN LATERAL (
      SELECT ${columns}, events.received_at
      FROM events
      ${whereAll([...parts.conditions, sql.fragment`events.id = event_search_queue.event_id`, ...pending])}
      OFFSET 0
    ) AS queued
    ORDER BY queued.received_at ${direction}, queued.id ${direction}
    LIMIT ${limit}
  )`;
}

/** The payload search over an event's search row (indexed) and over its payload (queued). */
function matchConditions(parts: SearchParts): { indexed: FragmentSqlToken; pending: FragmentSqlToken[] } {
  const indexed: FragmentSqlToken[] = [];
  const pending: FragmentSqlToken[] = [];
  if (parts.q !== null) {
    indexed.push(sql.fragment`event_search.payload_tsv @@ websearch_to_tsquery('simple', ${parts.q})`);
    pending.push(
      sql.fragment`switchboard_payload_tsvector(events.payload) @@ websearch_to_tsquery('simple', ${parts.q})`,
    );
  }
  if (parts.match !== null) {
    indexed.push(sql.fragment`event_search.payload_json @> ${parts.match}::jsonb`);
    pending.push(sql.fragment`switchboard_payload_jsonb(events.payload) @> ${parts.match}::jsonb`);
  }
  return { indexed: sql.fragment`${sql.join(indexed, sql.fragment` AND `)}`, pending };
}

// One statement whose four branches share the CTEs above them: split, the steps could no longer
// skip each other inside one plan.
export function buildSearchSql(parts: SearchParts): QuerySqlToken<typeof apiSummaryRow> {
  const { columns, direction, limit } = parts;
  const { indexed, pending } = matchConditions(parts);
  const recentRows = RECENT_ROWS_PER_ROW * limit;
  const where = (extra: FragmentSqlToken[]): FragmentSqlToken => whereAll([...parts.conditions, ...extra]);
  const orderBy = {
    events: sql.fragment`ORDER BY events.received_at ${direction}, events.id ${direction}`,
    recent: sql.fragment`ORDER BY recent.received_at ${direction}, recent.id ${direction}`,
    found: sql.fragment`ORDER BY found.received_at ${direction}, found.id ${direction}`,
  };
  // A scalar subquery, not a join: it cannot be flattened, so the walk stays a walk (one
  // primary-key probe per event) whatever the planner thinks of the term. NULL (not indexed yet)
  // does not match; the queued branch finds those.
  // The search row is in the partition of its event's received_at: naming it reads one partition.
  const probe = (table: 'recent' | 'events'): FragmentSqlToken =>
    sql.fragment`(SELECT ${indexed} FROM event_search WHERE event_search.event_id = ${sql.identifier([table, 'id'])}
      AND event_search.event_received_at = ${sql.identifier([table, 'received_at'])} ${searchRange})`;
  const inRange = (column: FragmentSqlToken): FragmentSqlToken => rangeOn(parts, column);
  const searchRange = inRange(sql.fragment`event_search.event_received_at`);
  const walked = sql.fragment`(SELECT enough FROM walked)`;
  const few = sql.fragment`(SELECT yes FROM few)`;

  return sql.type(apiSummaryRow)`
    WITH recent AS MATERIALIZED (
      SELECT events.id, events.received_at FROM events ${where([])} ${orderBy.events} LIMIT ${recentRows}
    ), recent_hits AS MATERIALIZED (
      SELECT recent.id, recent.received_at FROM recent WHERE ${probe('recent')} ${orderBy.recent} LIMIT ${limit}
    ), walked AS MATERIALIZED (
      SELECT (SELECT count(*) FROM recent_hits) >= ${limit} OR (SELECT count(*) FROM recent) < ${recentRows} AS enough
    ), candidates AS MATERIALIZED (
      SELECT event_search.event_id, event_search.event_received_at FROM event_search
      WHERE ${indexed} ${searchRange} AND NOT ${walked} LIMIT ${MAX_CANDIDATES + 1}
    ), few AS MATERIALIZED (
      SELECT count(*) <= ${MAX_CANDIDATES} AS yes FROM candidates
    )
    SELECT found.id, found.provider, found.event_type, found.trust_mode, found.verified, found.payload_size, found.received_at_utc, found.summary
    FROM (
      (
        SELECT ${columns}, events.received_at
        FROM recent_hits JOIN events ON events.id = recent_hits.id AND events.received_at = recent_hits.received_at
          ${inRange(sql.fragment`events.received_at`)}
        WHERE ${walked}
        ${orderBy.events}
        LIMIT ${limit}
      )
      UNION ALL
      (
        SELECT matched.*
        FROM candidates
        -- One key probe per candidate, in its partition: a join would let the planner merge the
        -- few candidates against a walk of every partition's received_at index.
        CROSS JOIN LATERAL (
          SELECT ${columns}, events.received_at
          FROM events
          ${where([
            sql.fragment`events.id = candidates.event_id`,
            sql.fragment`events.received_at = candidates.event_received_at`,
          ])}
          OFFSET 0
        ) AS matched
        WHERE NOT ${walked} AND ${few}
        ORDER BY matched.received_at ${direction}, matched.id ${direction}
        LIMIT ${limit}
      )
      UNION ALL
      (
        SELECT ${columns}, events.received_at
        FROM events
        ${where([sql.fragment`NOT ${walked}`, sql.fragment`NOT ${few}`, probe('events')])}
        ${orderBy.events}
        LIMIT ${limit}
      )
      UNION ALL
      ${queuedBranch(parts, pending)}
    ) AS found
    ${orderBy.found}
    LIMIT ${limit}
  `;
}

const candidatesRow = z.object({
  full: z.boolean(),
  ids: z.array(z.string()),
  ats: z.array(z.string()),
  queued: z.boolean(),
});
type Candidates = z.infer<typeof candidatesRow>;

/**
 * Step 2 over the rest of a search's range at once (`rest`), if the first statement (`first`)
 * walked a full step 1 (RECENT_ROWS_PER_ROW events per row of its page, passing the other filters):
 * whether it did, the GIN index's matches in the rest, at most MAX_CANDIDATES + 1, with their
 * received_at, and whether any event waits for the indexer. When step 1 was not full the index is
 * not read (a one-time filter). Past the walk's check it reads event_search alone, so it plans
 * quickly over any number of partitions.
 */
function buildCandidatesSql(rest: SearchParts, first: SearchParts): QuerySqlToken<typeof candidatesRow> {
  const { indexed } = matchConditions(rest);
  const recentRows = RECENT_ROWS_PER_ROW * first.limit;
  return sql.type(candidatesRow)`
    WITH walk AS MATERIALIZED (
      SELECT count(*) >= ${recentRows} AS full
      FROM (SELECT 1 FROM events ${whereAll(first.conditions)} LIMIT ${recentRows}) AS seen
    )
    SELECT (SELECT walk.full FROM walk) AS full,
      coalesce(array_agg(found.event_id::text), '{}') AS ids,
      coalesce(array_agg(${utcText(sql.fragment`found.event_received_at`)}), '{}') AS ats,
      EXISTS (SELECT 1 FROM event_search_queue) AS queued
    FROM (
      SELECT event_search.event_id, event_search.event_received_at FROM event_search
      WHERE ${indexed} ${rangeOn(rest, sql.fragment`event_search.event_received_at`)} AND (SELECT walk.full FROM walk)
      LIMIT ${MAX_CANDIDATES + 1}
    ) AS found
  `;
}

/**
 * The page from a few candidates (and the queued events): each joined to its event by key and
 * filtered, in order. The events read are bounded by the candidates' own oldest and newest
 * received_at, so only their partitions are planned. Null when there is nothing to read.
 */
function buildCandidatePageSql(parts: SearchParts, candidates: Candidates): QuerySqlToken<typeof apiSummaryRow> | null {
  const { columns, direction, limit } = parts;
  const branches: FragmentSqlToken[] = [];
  const micros = candidates.ats.map((at) => {
    const value = microsFromRfc3339(at);
    if (value === null) throw new Error(`unexpected received_at ${at}`);
    return value;
  });
  if (micros.length > 0) {
    const oldest = rfc3339FromMicros(micros.reduce((a, b) => (b < a ? b : a)));
    const newest = rfc3339FromMicros(micros.reduce((a, b) => (b > a ? b : a)));
    branches.push(sql.fragment`(
      SELECT matched.*
      FROM unnest(${sql.array(candidates.ids, 'uuid')}, ${sql.array(candidates.ats, 'timestamptz')})
        AS candidates(event_id, event_received_at)
      CROSS JOIN LATERAL (
        SELECT ${columns}, events.received_at
        FROM events
        ${whereAll([
          ...parts.conditions,
          sql.fragment`events.id = candidates.event_id`,
          sql.fragment`events.received_at = candidates.event_received_at`,
          sql.fragment`events.received_at >= ${oldest}::timestamptz`,
          sql.fragment`events.received_at <= ${newest}::timestamptz`,
        ])}
        OFFSET 0
      ) AS matched
      ORDER BY matched.received_at ${direction}, matched.id ${direction}
      LIMIT ${limit}
    )`);
  }
  if (candidates.queued) branches.push(queuedBranch(parts, matchConditions(parts).pending));
  if (branches.length === 0) return null;
  return sql.type(apiSummaryRow)`
    SELECT found.id, found.provider, found.event_type, found.trust_mode, found.verified, found.payload_size, found.received_at_utc, found.summary
    FROM (${sql.join(branches, sql.fragment` UNION ALL `)}) AS found
    ORDER BY found.received_at ${direction}, found.id ${direction}
    LIMIT ${limit}
  `;
}

/**
 * The rest of a search past its first group of partitions (partition-walk.ts), when the first
 * statement (`first`) did not fill the page. If its step 1 walked a full set of the newest events,
 * the term is rare: its matches in the whole rest of the range (`rest`) are taken from the GIN
 * index in one statement and, if there are at most MAX_CANDIDATES, joined to their events in a
 * second. Two statements whatever the number of partitions, where walking on group by group
 * repeated step 1 and planned all three steps in every group (docs/adr/partition-plans.md).
 * Answers null, for the caller to walk on, when the first group held fewer events than step 1
 * walks (a filter or the minutes after midnight leave it short, and a common term would then
 * reach the GIN index over full partitions: bounded-search.md) or there are more matches.
 */
export async function searchRest(
  read: SearchReader,
  rest: SearchParts,
  first: SearchParts,
): Promise<ApiSummaryRow[] | null> {
  const [candidates] = await read(buildCandidatesSql(rest, first));
  if (candidates?.full !== true || candidates.ids.length > MAX_CANDIDATES) return null;
  const page = buildCandidatePageSql(rest, candidates);
  return page === null ? [] : [...(await read(page))];
}
