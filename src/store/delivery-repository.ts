/**
 * Forwarding's outbox as the dispatcher and the API see it: claiming due deliveries (FOR UPDATE
 * SKIP LOCKED, so instances sharing the database never claim the same row), settling attempts,
 * manual retries, pause state, and each rule's health. The rows themselves are written by the
 * event store's insert, in the event's own statement.
 *
 * Over 400 lines: every statement of the outbox, beside the row shapes they share; claiming,
 * settling and health read the same columns and are checked together.
 */
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import {
  DELIVERY_ERROR_LIMITS,
  DELIVERY_STATES,
  FORWARD_STATES,
  type ForwardState,
} from '../../generated/constants.ts';
import type { Delivery, DeliveryAttempt } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { assertStorePool } from './database.ts';
import { normalizeEventId } from '../shared/event-id.ts';
import { claimedRowFrom } from './claimed-row.ts';
import type { StoredEvent } from './event-store.ts';
import { receivedAtUtc } from './list-query.ts';
import { storable, storableOrNull } from './storable-text.ts';
import { utcColumn } from './timestamps.ts';

export interface ClaimedDelivery {
  id: string;
  eventId: string;
  rule: string;
  /** This attempt's number (X-Switchboard-Attempt). */
  attempt: number;
  /** Attempts made before the last manual retry: max_attempts counts from here. */
  budgetStart: number;
  /** Proves the claim when settling; a claim that expired and was taken over settles nothing. */
  claim: string;
  /** The event to send, read by the claim statement itself (no second round trip per delivery). */
  event: StoredEvent;
}

export interface ClaimRequest {
  rule: string;
  limit: number;
  claimTimeoutMs: number;
  /** Only the rule's oldest open delivery, and only when it is due and nothing else is in flight. */
  ordered: boolean;
  claim: string;
}

export interface AttemptRecord {
  startedAt: Date;
  status: number | null;
  ms: number | null;
  error: string | null;
  excerpt: string | null;
  contentType: string | null;
}

/** What becomes of the delivery after an attempt. */
export type Settlement = { state: 'delivered' } | { state: 'dead' } | { state: 'failed'; retryInMs: number };

export interface SettleOutcome {
  delivery: Pick<ClaimedDelivery, 'id' | 'rule' | 'attempt' | 'claim'>;
  attempt: AttemptRecord;
  settlement: Settlement;
}

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

export type RetryOutcome =
  { kind: 'retried'; delivery: Delivery } | { kind: 'not_found' } | { kind: 'busy'; state: string };

export interface DeliveryRepository {
  claim(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /**
   * Settles a batch of finished attempts of one rule and claims that rule's next due deliveries,
   * in one statement when the rule is unordered (ordered: the settle, then the head's claim). No
   * claim when request is null.
   */
  settleAndClaim(outcomes: readonly SettleOutcome[], request: ClaimRequest | null): Promise<ClaimedDelivery[]>;
  /** Records the attempt and, when the claim still holds, moves the delivery on. */
  settle(delivery: ClaimedDelivery, attempt: AttemptRecord, settlement: Settlement): Promise<void>;
  /** settle for many attempts in one statement: every attempt is recorded, each delivery moved on. */
  settleMany(outcomes: readonly SettleOutcome[]): Promise<void>;
  forEvent(eventId: string): Promise<Delivery[]>;
  get(id: string): Promise<Delivery | null>;
  /** A failed, dead or pending delivery becomes pending now, with a fresh max_attempts. */
  retry(id: string): Promise<RetryOutcome>;
  /** Every dead delivery of the rule becomes pending now; answers how many. */
  retryDead(rule: string): Promise<number>;
  /**
   * Every delivery of the rule waiting out a backoff becomes due now; answers how many. Called
   * when the consumer answered again, so a backlog drains at once instead of retry by retry.
   */
  dueNow(rule: string): Promise<number>;
  setPaused(rule: string, paused: boolean): Promise<void>;
  health(rules: readonly string[]): Promise<RuleHealth[]>;
  /**
   * At start-up: every delivery of a rule not in `rules` that is not delivered becomes cancelled,
   * with the reason, and the pause state of such rules is forgotten, so a rule of the same name
   * added later starts afresh. Answers how many were cancelled, per rule.
   */
  cancelUnconfigured(rules: readonly string[]): Promise<Map<string, number>>;
  /** Each listed event's forwarding across its rules; events no rule took are absent. */
  forwardStates(eventIds: readonly string[]): Promise<Map<string, ForwardState>>;
}

const OPEN_STATES = sql.fragment`('pending', 'delivering', 'failed')`;

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

const uuidOrNull = (id: string): string | null => normalizeEventId(id);

/**
 * The settling of a batch of finished attempts, as CTEs (input, settled, recorded) for a statement
 * to start with: each delivery whose claim still holds moves on, and every attempt is recorded (a
 * claim taken over still leaves its attempt in the history, as long as the delivery exists).
 */
function settleCtes(outcomes: readonly SettleOutcome[]): FragmentSqlToken {
  const column = <T>(pick: (outcome: SettleOutcome) => T): T[] => outcomes.map(pick);
  return sql.fragment`
    input AS (
      SELECT * FROM unnest(
        ${sql.array(
          column((o) => o.delivery.id),
          'uuid',
        )}, ${sql.array(
          column((o) => o.delivery.claim),
          'uuid',
        )}, ${sql.array(
          column((o) => o.delivery.attempt),
          'int4',
        )}, ${sql.array(
          column((o) => o.delivery.rule),
          'text',
        )}, ${sql.array(
          column((o) => o.settlement.state),
          'text',
        )}, ${sql.array(
          column((o) => (o.settlement.state === 'failed' ? Math.max(0, Math.round(o.settlement.retryInMs)) : null)),
          'int8',
        )}, ${sql.array(
          column((o) => o.attempt.startedAt.toISOString()),
          'timestamptz',
        )}, ${sql.array(
          column((o) => o.attempt.status),
          'int4',
        )}, ${sql.array(
          column((o) => o.attempt.ms),
          'float8',
        )}, ${sql.array(
          column((o) =>
            o.attempt.error === null ? null : storable(o.attempt.error.slice(0, DELIVERY_ERROR_LIMITS.maxLength)),
          ),
          'text',
        )}, ${sql.array(
          // A consumer's answer is outside bytes: text PostgreSQL refuses must not fail the batch.
          column((o) => storableOrNull(o.attempt.excerpt)),
          'text',
        )}, ${sql.array(
          column((o) => storableOrNull(o.attempt.contentType)),
          'text',
        )}
      ) AS t(id, claim, attempt, rule, state, retry_ms, started_at, status, ms, error, excerpt, content_type)
    ), settled AS (
      UPDATE deliveries SET state = input.state, claim = NULL,
        next_attempt_at = CASE WHEN input.state = 'failed'
          THEN clock_timestamp() + input.retry_ms * interval '1 millisecond' END,
        delivered_at = CASE WHEN input.state = 'delivered' THEN clock_timestamp() END
      FROM input
      WHERE deliveries.id = input.id AND deliveries.claim = input.claim
      RETURNING deliveries.id
    ), recorded AS (
      INSERT INTO delivery_attempts
        (delivery_id, event_received_at, attempt, rule, started_at, response_status, response_ms, error,
          response_excerpt, response_content_type)
      SELECT input.id, deliveries.event_received_at, input.attempt, input.rule, input.started_at, input.status,
        input.ms, input.error, input.excerpt, input.content_type
      FROM input JOIN deliveries ON deliveries.id = input.id
      ON CONFLICT (delivery_id, attempt, event_received_at) DO NOTHING
      RETURNING delivery_id
    )`;
}

// Over 80 lines: a repository: one closure over the pool whose methods are each a short statement
// of the outbox; its length is their number, and they share the row shapes above.
export function createDeliveryRepository(pool: DatabasePool): DeliveryRepository {
  assertStorePool(pool);

  async function withAttempts(rows: readonly z.infer<typeof deliveryRow>[]): Promise<Delivery[]> {
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

  async function get(id: string): Promise<Delivery | null> {
    const uuid = uuidOrNull(id);
    if (uuid === null) throw invalidArgument('id must be a delivery id (a UUID)');
    const row = await pool.maybeOne(sql.type(deliveryRow)`
      SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE deliveries.id = ${uuid}
    `);
    if (row === null) return null;
    const [delivery] = await withAttempts([row]);
    return delivery ?? null;
  }

  /**
   * One statement for a batch of finished attempts: each delivery whose claim still holds moves
   * on, and every attempt is recorded (a claim taken over still leaves its attempt in the history,
   * as long as the delivery exists).
   */
  async function settleMany(outcomes: readonly SettleOutcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await pool.query(sql.unsafe`
      WITH ${settleCtes(outcomes)}
      SELECT count(*) FROM recorded
    `);
  }

  const notPaused = (rule: string) =>
    sql.fragment`NOT EXISTS (SELECT 1 FROM forward_rule_state WHERE forward_rule_state.rule = ${rule} AND forward_rule_state.paused)`;

  const claimUpdate = (request: ClaimRequest) => sql.fragment`
    UPDATE deliveries SET state = 'delivering', attempt_count = deliveries.attempt_count + 1, claim = ${request.claim},
      next_attempt_at = clock_timestamp() + ${request.claimTimeoutMs} * interval '1 millisecond'
    FROM due, events WHERE deliveries.id = due.id AND events.id = deliveries.event_id
    RETURNING deliveries.id AS delivery_id, deliveries.rule, deliveries.attempt_count, deliveries.budget_start, deliveries.seq,
      events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
      ${receivedAtUtc('events')} AS received_at_utc, events.passed_check, events.received_size, events.verify_detail,
      events.external_id, events.content_type, events.source_ip, events.headers, events.payload, events.summary,
      events.request_method, events.request_path, events.request_query, events.response_status
  `;

  function claimedFromRows(rows: readonly unknown[], claim: string): ClaimedDelivery[] {
    return rows
      .map(claimedRowFrom)
      .sort((a, b) => a.seq - b.seq)
      .map((row) => ({
        id: row.deliveryId,
        eventId: row.event.id,
        rule: row.rule,
        attempt: row.attempt,
        budgetStart: row.budgetStart,
        claim,
        event: row.event,
      }));
  }

  /** Due rows of an unordered rule, oldest first; rows being settled in the same statement excluded. */
  const dueRows = (request: ClaimRequest, settling: boolean) => sql.fragment`
    due AS (
      SELECT deliveries.id FROM deliveries
      WHERE deliveries.rule = ${request.rule} AND deliveries.state IN ${OPEN_STATES}
        AND deliveries.next_attempt_at <= clock_timestamp() AND ${notPaused(request.rule)}
        ${settling ? sql.fragment`AND NOT EXISTS (SELECT 1 FROM input WHERE input.id = deliveries.id)` : sql.fragment``}
      ORDER BY deliveries.seq
      LIMIT ${request.limit}
      FOR UPDATE SKIP LOCKED
    )`;

  // Ordered: only the head of the rule's queue, and only when it is due. SKIP LOCKED would hand a
  // second instance the next row while the head is locked, so instances take turns on an advisory
  // lock instead; the head stays "delivering" (not due) while one is in flight.
  const claimOrdered = (request: ClaimRequest): Promise<ClaimedDelivery[]> =>
    pool.transaction(async (tx) => {
      const locked = await tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`
        SELECT pg_try_advisory_xact_lock(hashtext(${`switchboard-forward:${request.rule}`})) AS locked
      `);
      if (!locked) return [];
      const rows = await tx.any(sql.unsafe`
        WITH head AS (
          SELECT deliveries.id, deliveries.next_attempt_at FROM deliveries
          WHERE deliveries.rule = ${request.rule} AND deliveries.state IN ${OPEN_STATES}
          ORDER BY deliveries.seq
          LIMIT 1
          FOR UPDATE
        ), due AS (
          SELECT head.id FROM head WHERE head.next_attempt_at <= clock_timestamp() AND ${notPaused(request.rule)}
        )
        ${claimUpdate(request)}
      `);
      return claimedFromRows(rows, request.claim);
    });

  async function claim(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (request.ordered) return claimOrdered(request);
    const rows = await pool.any(sql.unsafe`
      WITH ${dueRows(request, false)}
      ${claimUpdate(request)}
    `);
    return claimedFromRows(rows, request.claim);
  }

  return {
    claim,

    async settleAndClaim(outcomes, request) {
      if (request === null || request.limit <= 0) {
        await settleMany(outcomes);
        return [];
      }
      if (request.ordered || outcomes.length === 0) {
        // Ordered: the head must be settled before the next one is claimed.
        await settleMany(outcomes);
        return claim(request);
      }
      // One statement, one transaction: the batch's attempts settle and the next rows are claimed.
      const rows = await pool.any(sql.unsafe`
        WITH ${settleCtes(outcomes)}, ${dueRows(request, true)}
        ${claimUpdate(request)}
      `);
      return claimedFromRows(rows, request.claim);
    },

    settle(delivery, attempt, settlement) {
      return settleMany([{ delivery, attempt, settlement }]);
    },

    settleMany,

    async forEvent(eventId) {
      const uuid = normalizeEventId(eventId);
      if (uuid === null) throw invalidArgument('id must be an event id (a UUID)');
      const rows = await pool.any(sql.type(deliveryRow)`
        SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE deliveries.event_id = ${uuid} ORDER BY deliveries.rule
      `);
      return withAttempts(rows);
    },

    get,

    async retry(id) {
      const uuid = uuidOrNull(id);
      if (uuid === null) throw invalidArgument('id must be a delivery id (a UUID)');
      const updated = await pool.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
        UPDATE deliveries SET state = 'pending', next_attempt_at = clock_timestamp(), budget_start = deliveries.attempt_count
        WHERE deliveries.id = ${uuid} AND deliveries.state IN ('pending', 'failed', 'dead')
        RETURNING deliveries.id
      `);
      if (updated === null) {
        const current = await get(uuid);
        return current === null ? { kind: 'not_found' } : { kind: 'busy', state: current.state };
      }
      const delivery = await get(uuid);
      return delivery === null ? { kind: 'not_found' } : { kind: 'retried', delivery };
    },

    async retryDead(rule) {
      const rows = await pool.any(sql.type(z.object({ id: z.string() }))`
        UPDATE deliveries SET state = 'pending', next_attempt_at = clock_timestamp(), budget_start = deliveries.attempt_count
        WHERE deliveries.rule = ${rule} AND deliveries.state = 'dead'
        RETURNING deliveries.id
      `);
      return rows.length;
    },

    async dueNow(rule) {
      // Only 'failed' rows wait on a backoff: a 'delivering' row's next_attempt_at is its claim's expiry.
      const rows = await pool.any(sql.type(z.object({ id: z.string() }))`
        UPDATE deliveries SET next_attempt_at = clock_timestamp()
        WHERE deliveries.rule = ${rule} AND deliveries.state = 'failed' AND deliveries.next_attempt_at > clock_timestamp()
        RETURNING deliveries.id
      `);
      return rows.length;
    },

    async setPaused(rule, paused) {
      await pool.query(sql.unsafe`
        INSERT INTO forward_rule_state (rule, paused) VALUES (${rule}, ${paused})
        ON CONFLICT (rule) DO UPDATE SET paused = EXCLUDED.paused, updated_at = clock_timestamp()
      `);
    },

    async health(rules) {
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
    },

    async cancelUnconfigured(rules) {
      const configured = sql.array([...rules], 'text');
      return pool.transaction(async (tx) => {
        const rows = await tx.any(sql.type(z.object({ rule: z.string(), cancelled: z.coerce.number() }))`
          WITH cancelled AS (
            UPDATE deliveries SET state = 'cancelled', claim = NULL, next_attempt_at = NULL,
              cancel_reason = 'forward rule ' || deliveries.rule || ' is no longer configured'
            WHERE deliveries.state IN ('pending', 'delivering', 'failed', 'dead')
              AND NOT (deliveries.rule = ANY(${configured}))
            RETURNING deliveries.rule
          )
          SELECT cancelled.rule, count(*) AS cancelled FROM cancelled GROUP BY cancelled.rule
        `);
        await tx.query(
          sql.unsafe`DELETE FROM forward_rule_state WHERE NOT (forward_rule_state.rule = ANY(${configured}))`,
        );
        return new Map(rows.map((row) => [row.rule, row.cancelled]));
      });
    },

    async forwardStates(eventIds) {
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
    },
  };
}
