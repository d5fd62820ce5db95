/**
 * Moves the rows of a database created before time partitions (migration 0011 renamed its tables
 * to *_unpartitioned) into the partitioned tables, a batch of events at a time. Each batch is one
 * transaction that copies the events with everything that hangs off them (search rows, replay
 * attempts, deliveries and their attempts) and then deletes them from the old tables, so an
 * interrupted upgrade resumes where it stopped, and nothing is ever in both places or neither.
 *
 * It runs under the migration lock, before the instance serves: the time it takes is the
 * downtime docs/scaling.md describes.
 */
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { PartitionUnit } from '../../../generated/constants.ts';
import type { Logger } from '../../log/logger.ts';
import { ensurePartitions } from './partitions.ts';

/**
 * Events per transaction: big enough that per-statement costs vanish, small enough to stay a short lock.
 * @internal outside src/, only tests or benches use it
 */
export const UPGRADE_BATCH_EVENTS = 5_000;

/**
 * Old events get partitions for at most this many periods back; anything older goes to the
 * DEFAULT partition (a dated partition per day of years of history would slow every plan).
 */
const MAX_PAST_PERIODS = 120;

const EVENT_COLUMNS = sql.fragment`id, provider, event_type, trust_mode, verified, verify_detail, external_id,
  content_type, source_ip, headers, payload, received_at, passed_check, received_size, summary, request_method,
  request_path, request_query, response_status`;

const idsRow = z.object({ ids: z.array(z.string()) });

export interface UpgradeOptions {
  unit: PartitionUnit;
  logger: Logger;
  batchEvents?: number;
}

/** Answers the number of events moved (0 when there was nothing to upgrade). */
export async function upgradeToPartitions(db: CommonQueryMethods, options: UpgradeOptions): Promise<number> {
  const { logger, unit } = options;
  const pending = await db.oneFirst(sql.type(z.object({ pending: z.boolean() }))`
    SELECT to_regclass('events_unpartitioned') IS NOT NULL AS pending
  `);
  if (!pending) return 0;
  const batch = options.batchEvents ?? UPGRADE_BATCH_EVENTS;
  const total = await db.oneFirst(sql.type(z.object({ total: z.number() }))`
    SELECT count(*)::float8 AS total FROM events_unpartitioned
  `);
  // The partitions ahead first (as at every start), then one for each recent period that has
  // events; gaps, older history and anything dated beyond the time ahead go to DEFAULT.
  let created = await ensurePartitions(db, unit);
  const periods = await db.anyFirst(sql.type(z.object({ period: z.string() }))`
    SELECT DISTINCT (date_trunc(${unit}, received_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::text AS period
    FROM events_unpartitioned
    WHERE received_at >= now() - ${MAX_PAST_PERIODS} * ${`1 ${unit}`}::interval AND received_at < now()
  `);
  for (const period of periods) created += await ensurePartitions(db, unit, period);
  if (total > 0) logger.info({ total, created, unit }, 'moving events into time partitions');
  const started = process.hrtime.bigint();
  let moved = 0;
  for (;;) {
    const count = await moveBatch(db, batch);
    if (count === 0) break;
    moved += count;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    logger.info(
      { moved, total, percent: total > 0 ? Math.round((1000 * moved) / total) / 10 : 100, seconds },
      'moving events into time partitions',
    );
  }
  await db.query(sql.unsafe`
    DROP TABLE delivery_attempts_unpartitioned, deliveries_unpartitioned, replay_attempts_unpartitioned,
      event_search_unpartitioned, events_unpartitioned
  `);
  if (moved > 0) logger.info({ moved }, 'events moved into time partitions; old tables dropped');
  return moved;
}

async function moveBatch(db: CommonQueryMethods, batch: number): Promise<number> {
  return db.transaction(async (tx) => {
    // Oldest first, so an interrupted upgrade has moved a prefix of history.
    const ids = await tx.oneFirst(sql.type(idsRow)`
      SELECT coalesce(array_agg(id), '{}')::text[] AS ids FROM (
        SELECT id FROM events_unpartitioned ORDER BY received_at, id LIMIT ${batch} FOR UPDATE
      ) AS oldest
    `);
    if (ids.length === 0) return 0;
    const batchIds = sql.array(ids, 'uuid');
    // Since migration 0021 nothing on events writes an event's dependants but the statement that
    // stores it: the move writes the external-id keys itself.
    await tx.query(sql.unsafe`
      WITH moved AS (
        INSERT INTO events (${EVENT_COLUMNS})
        SELECT ${EVENT_COLUMNS} FROM events_unpartitioned WHERE id = ANY(${batchIds})
        RETURNING id, provider, external_id, received_at
      )
      INSERT INTO event_external_ids (provider, external_id, event_id, received_at)
      SELECT provider, external_id, id, received_at FROM moved WHERE external_id IS NOT NULL
    `);
    // Already indexed: the search row moves, so the indexer has nothing to redo.
    await tx.query(sql.unsafe`
      INSERT INTO event_search (event_id, event_received_at, payload_json, payload_tsv)
      SELECT s.event_id, e.received_at, s.payload_json, s.payload_tsv
      FROM event_search_unpartitioned s JOIN events_unpartitioned e ON e.id = s.event_id
      WHERE s.event_id = ANY(${batchIds})
    `);
    // Not indexed yet: queued for the indexer (an entry the old queue already holds stays).
    await tx.query(sql.unsafe`
      INSERT INTO event_search_queue (event_id)
      SELECT id FROM unnest(${batchIds}::uuid[]) AS moved(id)
      WHERE NOT EXISTS (SELECT 1 FROM event_search_unpartitioned s WHERE s.event_id = moved.id)
      ON CONFLICT DO NOTHING
    `);
    await tx.query(sql.unsafe`
      INSERT INTO replay_attempts (id, event_id, event_received_at, caller, target_url, resolved_ip, started_at,
        delivered, response_status, response_ms, error_code, unsigned, response_excerpt, response_content_type, error_reason)
      SELECT r.id, r.event_id, e.received_at, r.caller, r.target_url, r.resolved_ip, r.started_at, r.delivered,
        r.response_status, r.response_ms, r.error_code, r.unsigned, r.response_excerpt, r.response_content_type, r.error_reason
      FROM replay_attempts_unpartitioned r JOIN events_unpartitioned e ON e.id = r.event_id
      WHERE r.event_id = ANY(${batchIds})
    `);
    // seq keeps its value: it is the received order ordered forwarding sends in.
    await tx.query(sql.unsafe`
      INSERT INTO deliveries (id, event_id, event_received_at, rule, seq, state, attempt_count, budget_start,
        next_attempt_at, claim, created_at, delivered_at, cancel_reason)
      OVERRIDING SYSTEM VALUE
      SELECT d.id, d.event_id, e.received_at, d.rule, d.seq, d.state, d.attempt_count, d.budget_start,
        d.next_attempt_at, d.claim, d.created_at, d.delivered_at, d.cancel_reason
      FROM deliveries_unpartitioned d JOIN events_unpartitioned e ON e.id = d.event_id
      WHERE d.event_id = ANY(${batchIds})
    `);
    await tx.query(sql.unsafe`
      INSERT INTO delivery_attempts (delivery_id, event_received_at, attempt, rule, started_at, response_status,
        response_ms, error, response_excerpt, response_content_type)
      SELECT a.delivery_id, e.received_at, a.attempt, a.rule, a.started_at, a.response_status, a.response_ms, a.error,
        a.response_excerpt, a.response_content_type
      FROM delivery_attempts_unpartitioned a
      JOIN deliveries_unpartitioned d ON d.id = a.delivery_id
      JOIN events_unpartitioned e ON e.id = d.event_id
      WHERE d.event_id = ANY(${batchIds})
    `);
    // The old foreign keys cascade: the old search rows, replay attempts, deliveries and attempts go too.
    await tx.query(sql.unsafe`DELETE FROM events_unpartitioned WHERE id = ANY(${batchIds})`);
    return ids.length;
  });
}
