/**
 * A list page read a few partitions at a time, in the list order (docs/adr/time-partitions.md).
 *
 * One ORDER BY received_at ... LIMIT over the partitioned events table makes the planner plan a
 * Merge Append over every partition (39 with a month of days and the week made ahead) and the
 * executor start each one's index scan: that costs about a millisecond more than the rows read,
 * whatever the page. A query whose received_at bounds are constants is pruned at plan time to the
 * partitions of its range. So the page is read in groups of time slices, nearest first, each
 * statement bounded to its group, until the page is full:
 *
 * - the slices cut the whole timeline at every partition bound: each partition, and the stretches
 *   between and around them, which only the DEFAULT partition can hold. Together they cover every
 *   instant exactly once, so the concatenated groups are the unbounded query's rows in its order,
 *   whatever partitions exist: a stale list only costs pruning, never a row;
 * - the first group is the slice the walk starts in plus everything before it in the walk that is
 *   normally empty (the partitions made ahead of now, the stretch after the last partition); each
 *   later group holds twice the partitions of the one before, so a sparse filter takes a handful
 *   of statements, not one per partition;
 * - slices outside the query's own time bounds (cursor, since, until, from, to) are skipped.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ListOrder } from '../../../generated/constants.ts';
import type { ResolvedListQuery } from './list-statement.ts';
import { microsFromRfc3339, rfc3339FromMicros, utcText } from '../sql/timestamps.ts';

/** [from, to) in microseconds; null is unbounded. `partition`: a dated partition's suffix. */
export interface TimeSlice {
  from: bigint | null;
  to: bigint | null;
  partition: string | null;
}

/** The timeline cut at every partition bound, oldest first. Ranges never overlap (0011). */
function sliceTimeline(ranges: ReadonlyArray<{ lower: bigint; upper: bigint; suffix: string }>): TimeSlice[] {
  const sorted = [...ranges].sort((a, b) => (a.lower < b.lower ? -1 : a.lower > b.lower ? 1 : 0));
  const slices: TimeSlice[] = [];
  let at: bigint | null = null;
  for (const range of sorted) {
    if (at !== null && range.lower < at) continue;
    if (at === null || at < range.lower) slices.push({ from: at, to: range.lower, partition: null });
    slices.push({ from: range.lower, to: range.upper, partition: range.suffix });
    at = range.upper;
  }
  slices.push({ from: at, to: null, partition: null });
  return slices;
}

/** The inclusive received_at window a query can return rows from (wider is safe, never narrower). */
function window(query: ResolvedListQuery): { min: bigint | null; max: bigint | null } {
  const lows: Array<string | null | undefined> = [
    query.since !== null && 'time' in query.since ? query.since.time : null,
    query.after?.receivedAt,
    query.from,
    query.order === 'oldest_first' ? query.cursor?.receivedAt : null,
  ];
  const highs: Array<string | null | undefined> = [
    query.until !== null && 'time' in query.until ? query.until.time : null,
    query.upTo?.receivedAt,
    query.to,
    query.order === 'oldest_first' ? null : query.cursor?.receivedAt,
  ];
  const micros = (values: Array<string | null | undefined>) =>
    values.flatMap((value) => (value == null ? [] : [microsFromRfc3339(value)])).filter((v) => v !== null);
  const min = micros(lows).reduce<bigint | null>((a, b) => (a === null || b > a ? b : a), null);
  const max = micros(highs).reduce<bigint | null>((a, b) => (a === null || b < a ? b : a), null);
  return { min, max };
}

/** Contiguous runs of slices in walk order, each to be read by one statement. */
function groupSlices(slices: readonly TimeSlice[], order: ListOrder, now: bigint): TimeSlice[][] {
  const walk = order === 'oldest_first' ? [...slices] : [...slices].reverse();
  const groups: TimeSlice[][] = [];
  let current: TimeSlice[] = [];
  let partitions = 0;
  let size = 1;
  for (const slice of walk) {
    current.push(slice);
    // Newest first, a partition wholly after now is normally empty: it rides with the next one.
    const ahead = order === 'newest_first' && slice.from !== null && slice.from > now;
    if (slice.partition !== null && !ahead) partitions += 1;
    if (partitions >= size) {
      groups.push(current);
      current = [];
      partitions = 0;
      size *= 2;
    }
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The bounds of a group of slices (contiguous, in walk order) as from/to of a list query. */
function bounds(group: readonly TimeSlice[]): { from: bigint | null; to: bigint | null } {
  const froms = group.map((slice) => slice.from);
  const tos = group.map((slice) => slice.to);
  return {
    from: froms.includes(null) ? null : froms.reduce((a, b) => (b !== null && a !== null && b < a ? b : a)),
    to: tos.includes(null) ? null : tos.reduce((a, b) => (b !== null && a !== null && b > a ? b : a)),
  };
}

const later = (a: string | null, b: bigint | null): string | null => {
  if (b === null) return a;
  const given = a === null ? null : microsFromRfc3339(a);
  return given !== null && given >= b ? a : rfc3339FromMicros(b);
};
const earlier = (a: string | null, b: bigint | null): string | null => {
  if (b === null) return a;
  const given = a === null ? null : microsFromRfc3339(a);
  return given !== null && given <= b ? a : rfc3339FromMicros(b);
};

/**
 * The statements of one page, nearest group first: the query with its from/to narrowed to the
 * group and its limit to what the page still needs. `read` runs one and answers its rows.
 *
 * `rest`, when given, is asked once the first group has not filled the page, with the query
 * narrowed to everything after that group (and the first group's, as it was read): it answers the
 * rest of the page, or null to have the walk go on group by group.
 */
export async function walkPartitions<T>(
  slices: readonly TimeSlice[],
  query: ResolvedListQuery,
  read: (bounded: ResolvedListQuery) => Promise<readonly T[]>,
  rest?: (bounded: ResolvedListQuery, first: ResolvedListQuery) => Promise<readonly T[] | null>,
): Promise<T[]> {
  const { min, max } = window(query);
  const inWindow = slices.filter(
    (slice) =>
      (slice.to === null || min === null || slice.to > min) &&
      (slice.from === null || max === null || slice.from <= max),
  );
  const wanted = query.limit + 1;
  const rows: T[] = [];
  // buildListSql asks for limit + 1 rows.
  const boundedTo = (group: readonly TimeSlice[]): ResolvedListQuery => {
    const { from, to } = bounds(group);
    return { ...query, from: later(query.from, from), to: earlier(query.to, to), limit: wanted - rows.length - 1 };
  };
  const groups = groupSlices(inWindow, query.order, BigInt(Date.now()) * 1000n);
  let first: ResolvedListQuery | null = null;
  for (const [index, group] of groups.entries()) {
    if (first !== null && index === 1 && rest !== undefined) {
      const answered = await rest(boundedTo(groups.slice(1).flat()), first);
      if (answered !== null) {
        rows.push(...answered);
        break;
      }
    }
    const bounded = boundedTo(group);
    first ??= bounded;
    rows.push(...(await read(bounded)));
    if (rows.length >= wanted) break;
  }
  return rows;
}

const rangeRow = z.object({ lower: z.string(), upper: z.string(), suffix: z.string() });

/** How long a process reuses the partition list: a stale one costs pruning, never a row. */
const SLICES_TTL_MS = 30_000;

/** The timeline slices of the partitions that exist, read at most every SLICES_TTL_MS. */
export function createTimeline(pool: DatabasePool): () => Promise<readonly TimeSlice[]> {
  let cached: { at: number; slices: Promise<readonly TimeSlice[]> } | null = null;
  const load = async (): Promise<readonly TimeSlice[]> => {
    const rows = await pool.any(sql.type(rangeRow)`
      SELECT ${utcText(sql.fragment`lower_bound`)} AS lower, ${utcText(sql.fragment`upper_bound`)} AS upper, suffix
      FROM event_partitions
    `);
    return sliceTimeline(
      rows.flatMap((row) => {
        const lower = microsFromRfc3339(row.lower);
        const upper = microsFromRfc3339(row.upper);
        return lower === null || upper === null ? [] : [{ lower, upper, suffix: row.suffix }];
      }),
    );
  };
  return () => {
    const now = Date.now();
    if (cached === null || now - cached.at > SLICES_TTL_MS) {
      const loading = load();
      cached = { at: now, slices: loading };
      loading.catch(() => {
        if (cached?.slices === loading) cached = null;
      });
    }
    return cached.slices;
  };
}
