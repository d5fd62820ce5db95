/**
 * What the outbox adds up to: each forward rule's health (the API's and MCP's rule status) and
 * each event's forward state across its rules (shown beside it in lists).
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { FORWARD_STATES, type ForwardState } from '../../../generated/constants.ts';
import { OPEN_STATES, uuidOrNull } from './delivery-rows.ts';
import { microsFromRfc3339, rfc3339FromMicros, utcColumn } from '../sql/timestamps.ts';

export interface RuleHealth {
  rule: string;
  pending: number;
  /** Pending deliveries whose last attempt failed, waiting for their next one. */
  retrying: number;
  dead: number;
  deliveredLastHour: number;
  oldestPendingAge: number | null;
  lastError: string | null;
  lastErrorAt: string | null;
  paused: boolean;
}

const healthRow = z.object({
  rule: z.string(),
  pending: z.coerce.number(),
  retrying: z.coerce.number(),
  dead: z.coerce.number(),
  delivered_last_hour: z.coerce.number(),
  oldest_pending_age: z.number().nullable(),
  last_error: z.string().nullable(),
  last_error_at: z.string().nullable(),
  paused: z.boolean(),
});

export async function ruleHealth(pool: DatabasePool, rules: readonly string[]): Promise<RuleHealth[]> {
  if (rules.length === 0) return [];
  const rows = await pool.any(sql.type(healthRow)`
    SELECT r.rule,
      (SELECT count(*) FROM deliveries WHERE deliveries.rule = r.rule AND deliveries.state IN ${OPEN_STATES}) AS pending,
      (SELECT count(*) FROM deliveries WHERE deliveries.rule = r.rule AND deliveries.state = 'failed') AS retrying,
      (SELECT count(*) FROM deliveries WHERE deliveries.rule = r.rule AND deliveries.state = 'dead') AS dead,
      (SELECT count(*) FROM deliveries WHERE deliveries.rule = r.rule AND deliveries.state = 'delivered'
        AND deliveries.delivered_at > clock_timestamp() - interval '1 hour') AS delivered_last_hour,
      (SELECT extract(epoch FROM clock_timestamp() - deliveries.created_at)::float8 FROM deliveries
        WHERE deliveries.rule = r.rule AND deliveries.state IN ${OPEN_STATES} ORDER BY deliveries.seq LIMIT 1) AS oldest_pending_age,
      last_failure.error AS last_error,
      ${utcColumn('last_failure', 'started_at')} AS last_error_at,
      coalesce(forward_rule_state.paused, false) AS paused
    FROM unnest(${sql.array([...rules], 'text')}) WITH ORDINALITY AS r(rule, ord)
    LEFT JOIN forward_rule_state ON forward_rule_state.rule = r.rule
    LEFT JOIN LATERAL (
      SELECT delivery_attempts.error, delivery_attempts.started_at FROM delivery_attempts
      WHERE delivery_attempts.rule = r.rule AND delivery_attempts.error IS NOT NULL
      ORDER BY delivery_attempts.started_at DESC LIMIT 1
    ) AS last_failure ON true
    ORDER BY r.ord
  `);
  return rows.map((row) => ({
    rule: row.rule,
    pending: row.pending,
    retrying: row.retrying,
    dead: row.dead,
    deliveredLastHour: row.delivered_last_hour,
    oldestPendingAge: row.oldest_pending_age === null ? null : Math.max(0, row.oldest_pending_age),
    lastError: row.last_error,
    lastErrorAt: row.last_error_at,
    paused: row.paused,
  }));
}

/** An event of a list page: its id and its received_at (RFC 3339, as the page gives it). */
export interface ListedEvent {
  id: string;
  received_at: string;
}

/**
 * Each listed event's forwarding across its rules; events no rule took are absent.
 *
 * A page's events lie between its oldest and newest received_at, and so do their deliveries
 * (partitioned by their event's received_at). Named as constants, that span prunes both tables at
 * plan time to the partitions the page is in, and the join follows the events' key, id with
 * received_at: a page of ids alone was planned over every partition of both tables, and with the
 * deliveries partitions empty and never analysed (each then assumed 10 pages) PostgreSQL chose a
 * parallel plan whose two workers took 56 ms to start, on an instance with no delivery at all.
 */
export async function forwardStates(
  pool: DatabasePool,
  events: readonly ListedEvent[],
): Promise<Map<string, ForwardState>> {
  const listed = events.flatMap((event) => {
    const id = uuidOrNull(event.id);
    const micros = microsFromRfc3339(event.received_at);
    return id === null || micros === null ? [] : [{ id, micros }];
  });
  if (listed.length === 0) return new Map();
  const micros = listed.map((event) => event.micros);
  const oldest = rfc3339FromMicros(micros.reduce((a, b) => (b < a ? b : a)));
  const newest = rfc3339FromMicros(micros.reduce((a, b) => (b > a ? b : a)));
  const ids = sql.array(
    listed.map((event) => event.id),
    'uuid',
  );
  const rows = await pool.any(sql.type(z.object({ event_id: z.string(), forward_state: z.enum(FORWARD_STATES) }))`
    SELECT deliveries.event_id,
      CASE WHEN bool_or(deliveries.state = 'dead') THEN 'dead'
        WHEN bool_or(deliveries.state = 'failed') THEN 'failed'
        WHEN bool_or(deliveries.state IN ('pending', 'delivering')) THEN 'pending'
        -- failedItsCheck (config/forward-rules.ts): such an event only goes out unsigned.
        WHEN bool_or((events.trust_mode = 'signed' AND NOT coalesce(events.passed_check, events.verified))
          OR (events.trust_mode = 'token' AND events.passed_check IS NOT TRUE)) THEN 'delivered_unsigned'
        ELSE 'delivered' END AS forward_state
    FROM deliveries JOIN events ON events.id = deliveries.event_id AND events.received_at = deliveries.event_received_at
    WHERE deliveries.event_id = ANY(${ids}) AND deliveries.state <> 'cancelled'
      AND deliveries.event_received_at >= ${oldest}::timestamptz AND deliveries.event_received_at <= ${newest}::timestamptz
      AND events.received_at >= ${oldest}::timestamptz AND events.received_at <= ${newest}::timestamptz
    GROUP BY deliveries.event_id
  `);
  return new Map(rows.map((row) => [row.event_id, row.forward_state]));
}
