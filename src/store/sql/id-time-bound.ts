/**
 * Event (and delivery) ids are UUIDv7: the first 48 bits are the creation time in milliseconds,
 * taken a moment before the database stamps received_at. A lookup by id that also bounds
 * received_at around that time reads the one or two partitions the row can be in, instead of every
 * partition's key index (docs/adr/time-partitions.md).
 *
 * The bound is worked out here and handed to the statement as two timestamps: PostgreSQL prunes
 * partitions while planning only by constants, and the same bound computed in SQL (from the id,
 * minus an interval: a stable, not an immutable, expression) was pruned only when the statement
 * started, after every partition had been planned: 12-22 ms for an id lookup over 40 partitions
 * (docs/adr/partition-plans.md).
 *
 * The bound is a guess, not a fact: an id of another version, a row imported with its own
 * received_at, or clocks far apart put the row elsewhere. So a bounded lookup that finds nothing is
 * repeated without the bound; only a miss pays for reading every partition.
 */
import { sql, type FragmentSqlToken } from 'slonik';
import { rfc3339FromMicros } from './timestamps.ts';

/** Ingest waits milliseconds between making an id and stamping the row; an hour covers clock skew too. */
const MARGIN_MICROS = 3_600_000_000n;

/** The creation time a UUIDv7 carries, in microseconds since 1970; null for an id of another version. */
function uuidV7Micros(id: string): bigint | null {
  const hex = id.replaceAll('-', '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex) || hex[12] !== '7') return null;
  return BigInt(`0x${hex.slice(0, 12)}`) * 1000n;
}

/** `time` (a received_at column) within the margin of the time the UUIDv7 `id` carries; null when there is none. */
function nearIdTime(time: FragmentSqlToken, id: string): FragmentSqlToken | null {
  const micros = uuidV7Micros(id);
  if (micros === null) return null;
  let from: string;
  let to: string;
  try {
    from = rfc3339FromMicros(micros - MARGIN_MICROS);
    to = rfc3339FromMicros(micros + MARGIN_MICROS);
  } catch {
    // A time past what a timestamp holds: no event can have been stamped then.
    return null;
  }
  return sql.fragment`(${time} >= ${from}::timestamptz AND ${time} < ${to}::timestamptz)`;
}

/** Runs the lookup bounded by nearIdTime, then, when that finds nothing (or there is no bound), unbounded. */
export async function lookUpNearIdTime<T>(
  time: FragmentSqlToken,
  id: string,
  lookup: (bound: FragmentSqlToken) => Promise<T | null>,
): Promise<T | null> {
  const near = nearIdTime(time, id);
  const found = near === null ? null : await lookup(near);
  return found ?? lookup(sql.fragment`true`);
}
