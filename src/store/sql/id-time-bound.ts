/**
 * Event (and delivery) ids are UUIDv7: the first 48 bits are the creation time in milliseconds,
 * taken a moment before the database stamps received_at. A lookup by id that also bounds
 * received_at around that time reads the one or two partitions the row can be in, instead of every
 * partition's key index (docs/adr/time-partitions.md).
 *
 * The bound is a guess, not a fact: an id of another version, a row imported with its own
 * received_at, or clocks far apart put the row elsewhere. So a bounded lookup that finds nothing is
 * repeated without the bound; only a miss pays for reading every partition.
 */
import { sql, type FragmentSqlToken } from 'slonik';

/** Ingest waits milliseconds between making an id and stamping the row; an hour covers clock skew too. */
const MARGIN = sql.fragment`interval '1 hour'`;

/** `time` (a received_at column) within the margin of the time the UUIDv7 `id` carries. */
export function nearIdTime(time: FragmentSqlToken, id: string): FragmentSqlToken {
  return sql.fragment`(${time} >= switchboard_uuid_v7_time(${id}::uuid) - ${MARGIN}
    AND ${time} < switchboard_uuid_v7_time(${id}::uuid) + ${MARGIN})`;
}

/** Runs the lookup bounded by nearIdTime, then, when that finds nothing, unbounded. */
export async function lookUpNearIdTime<T>(
  time: FragmentSqlToken,
  id: string,
  lookup: (bound: FragmentSqlToken) => Promise<T | null>,
): Promise<T | null> {
  const found = await lookup(nearIdTime(time, id));
  return found ?? lookup(sql.fragment`true`);
}
