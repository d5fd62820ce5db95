/**
 * What the outbox adds up to: each forward rule's health (the API's and MCP's rule status) and
 * each event's forward state across its rules (shown beside it in lists).
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { FORWARD_STATES, type ForwardState } from '../../../generated/constants.ts';
import { OPEN_STATES, uuidOrNull } from './delivery-rows.ts';
import { utcColumn } from '../sql/timestamps.ts';

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

/** Each listed event's forwarding across its rules; events no rule took are absent. */
export async function forwardStates(
  pool: DatabasePool,
  eventIds: readonly string[],
): Promise<Map<string, ForwardState>> {
  const uuids = eventIds.map(uuidOrNull).filter((id): id is string => id !== null);
  if (uuids.length === 0) return new Map();
  const rows = await pool.any(sql.type(z.object({ event_id: z.string(), forward_state: z.enum(FORWARD_STATES) }))`
    SELECT deliveries.event_id,
      CASE WHEN bool_or(deliveries.state = 'dead') THEN 'dead'
        WHEN bool_or(deliveries.state = 'failed') THEN 'failed'
        WHEN bool_or(deliveries.state IN ('pending', 'delivering')) THEN 'pending'
        -- failedItsCheck (config/forward-rules.ts): such an event only goes out unsigned.
        WHEN bool_or((events.trust_mode = 'signed' AND NOT coalesce(events.passed_check, events.verified))
          OR (events.trust_mode = 'token' AND events.passed_check IS NOT TRUE)) THEN 'delivered_unsigned'
        ELSE 'delivered' END AS forward_state
    FROM deliveries JOIN events ON events.id = deliveries.event_id
    WHERE deliveries.event_id = ANY(${sql.array(uuids, 'uuid')}) AND deliveries.state <> 'cancelled'
    GROUP BY deliveries.event_id
  `);
  return new Map(rows.map((row) => [row.event_id, row.forward_state]));
}
