/**
 * Deliveries as the API shows them: the row shapes and columns the outbox statements share, and
 * reading deliveries with their attempt history.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { DELIVERY_STATES } from '../../../generated/constants.ts';
import type { Delivery, DeliveryAttempt } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import { utcColumn } from '../sql/timestamps.ts';

/** A delivery still to be made: waiting, in flight, or waiting out a backoff. */
export const OPEN_STATES = sql.fragment`('pending', 'delivering', 'failed')`;

const deliveryRow = z.object({
  id: z.string(),
  event_id: z.string(),
  rule: z.string(),
  state: z.enum(DELIVERY_STATES),
  attempt_count: z.number().int(),
  created_at: z.string(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  cancel_reason: z.string().nullable(),
});

const attemptRow = z.object({
  delivery_id: z.string(),
  attempt: z.number().int(),
  started_at: z.string(),
  status: z.number().int().nullable(),
  ms: z.number().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
  response_content_type: z.string().nullable(),
});

const DELIVERY_COLUMNS = sql.fragment`deliveries.id, deliveries.event_id, deliveries.rule, deliveries.state,
  deliveries.attempt_count, ${utcColumn('deliveries', 'created_at')} AS created_at,
  CASE WHEN deliveries.state IN ('pending', 'failed') THEN ${utcColumn('deliveries', 'next_attempt_at')} END AS next_attempt_at,
  ${utcColumn('deliveries', 'delivered_at')} AS delivered_at, deliveries.cancel_reason`;

function attemptFromRow(row: z.infer<typeof attemptRow>): DeliveryAttempt {
  return {
    attempt: row.attempt,
    started_at: row.started_at,
    status: row.status,
    ms: row.ms,
    error: row.error,
    ...(row.response_excerpt === null ? {} : { response_excerpt: row.response_excerpt }),
    ...(row.response_content_type === null ? {} : { response_content_type: row.response_content_type }),
  };
}

export const uuidOrNull = (id: string): string | null => normalizeEventId(id);

async function withAttempts(pool: DatabasePool, rows: readonly z.infer<typeof deliveryRow>[]): Promise<Delivery[]> {
  if (rows.length === 0) return [];
  const attempts = await pool.any(sql.type(attemptRow)`
    SELECT delivery_attempts.delivery_id, delivery_attempts.attempt,
      ${utcColumn('delivery_attempts', 'started_at')} AS started_at,
      delivery_attempts.response_status AS status, delivery_attempts.response_ms AS ms, delivery_attempts.error,
      delivery_attempts.response_excerpt, delivery_attempts.response_content_type
    FROM delivery_attempts
    WHERE delivery_attempts.delivery_id = ANY(${sql.array(
      rows.map((r) => r.id),
      'uuid',
    )})
    ORDER BY delivery_attempts.delivery_id, delivery_attempts.attempt
  `);
  const byDelivery = new Map<string, DeliveryAttempt[]>();
  for (const row of attempts) {
    const list = byDelivery.get(row.delivery_id) ?? [];
    list.push(attemptFromRow(row));
    byDelivery.set(row.delivery_id, list);
  }
  return rows.map(({ cancel_reason: reason, ...row }) => ({
    ...row,
    ...(reason === null ? {} : { cancel_reason: reason }),
    attempts: byDelivery.get(row.id) ?? [],
  }));
}

export async function getDelivery(pool: DatabasePool, id: string): Promise<Delivery | null> {
  const uuid = uuidOrNull(id);
  if (uuid === null) throw invalidArgument('id must be a delivery id (a UUID)');
  const row = await pool.maybeOne(sql.type(deliveryRow)`
    SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE deliveries.id = ${uuid}
  `);
  if (row === null) return null;
  const [delivery] = await withAttempts(pool, [row]);
  return delivery ?? null;
}

export async function deliveriesOfEvent(pool: DatabasePool, eventId: string): Promise<Delivery[]> {
  const uuid = normalizeEventId(eventId);
  if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
  const rows = await pool.any(sql.type(deliveryRow)`
    SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE deliveries.event_id = ${uuid} ORDER BY deliveries.rule
  `);
  return withAttempts(pool, rows);
}
