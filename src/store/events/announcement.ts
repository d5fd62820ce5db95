/**
 * How a stored event is announced, in one place: the insert statement that stores new events
 * also NOTIFYs their ids on one channel, so the announcement commits with the rows (one
 * transaction and one WAL flush per batch), is never sent for a batch that rolled back, and needs
 * no second connection. The live bus (bus/) LISTENs on that channel and reads the same format.
 *
 * The message: the new ids, comma-joined, at most IDS_PER_NOTIFY per NOTIFY.
 */
import { sql } from 'slonik';
import { isEventId } from '../../shared/event-id.ts';

/** A plain lower-case identifier, so the bus can LISTEN to it without quoting. */
export const ANNOUNCE_CHANNEL = 'switchboard_events';

/**
 * Ids per NOTIFY: 200 UUIDs (36 bytes) and their 199 commas are 7,399 bytes, under PostgreSQL's 8,000.
 * @internal outside src/, only tests or benches use it
 */
export const IDS_PER_NOTIFY = 200;

/**
 * A WHERE clause for the statement's final SELECT that NOTIFYs the ids of the CTE `inserted`
 * (the INSERT's RETURNING rows): an InitPlan, run once per statement, that filters nothing.
 */
export const ANNOUNCE_INSERTED = sql.fragment`WHERE (
  SELECT count(pg_notify(${ANNOUNCE_CHANNEL}, ids)) FROM (
    SELECT string_agg(id::text, ',' ORDER BY id) AS ids
    FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / ${IDS_PER_NOTIFY} AS part FROM inserted) AS numbered
    GROUP BY part
  ) AS parts
) >= 0`;

/** The event ids of one announcement; anything that is not an id is ignored. */
export function announcedIds(payload: string | undefined): string[] {
  if (payload === undefined || payload === '') return [];
  return payload.split(',').filter(isEventId);
}
