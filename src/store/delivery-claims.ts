/**
 * The forward dispatcher's side of the outbox: claiming due deliveries (FOR UPDATE SKIP LOCKED,
 * so instances sharing the database never claim the same row; an advisory lock for ordered
 * rules) and settling finished attempts, batched into as few statements as it can.
 */
import {
  sql,
  type DatabasePool,
  type FragmentSqlToken,
  type PrimitiveValueExpression,
  type TypeNameIdentifier,
} from 'slonik';
import { z } from 'zod';
import { DELIVERY_ERROR_LIMITS } from '../../generated/constants.ts';
import { claimedRowFrom } from './claimed-row.ts';
import { OPEN_STATES } from './delivery-rows.ts';
import type { StoredEvent } from './event-store.ts';
import { receivedAtUtc } from './list-query.ts';
import { storable, storableOrNull } from './storable-text.ts';

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
  /**
   * Rows this claimer still holds (sending, or waiting to be settled): never claimed again by it,
   * even when a lease it failed to renew in time looks due.
   */
  holding?: readonly string[];
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

/** Plain functions over the pool (no `this`): the repository hands them on as its methods. */
export interface DeliveryClaims {
  claim: (request: ClaimRequest) => Promise<ClaimedDelivery[]>;
  settleAndClaim: (outcomes: readonly SettleOutcome[], request: ClaimRequest | null) => Promise<ClaimedDelivery[]>;
  settleMany: (outcomes: readonly SettleOutcome[]) => Promise<void>;
  renew: (ids: readonly string[], claim: string, claimTimeoutMs: number) => Promise<string[]>;
}

/**
 * The hot statements' rows, read as they come (claimed-row.ts checks the claim's column by
 * column): a schema made once here, not the fresh z.any() every sql.unsafe builds, and one the
 * result parser passes over (database.ts).
 */
const rawRows = z.unknown();
const renewedRow = z.object({ id: z.string() });

/** The settling's input rows, a column each: its name, its type, and what each outcome puts in it. */
const SETTLE_INPUT: ReadonlyArray<
  readonly [name: string, type: TypeNameIdentifier, value: (outcome: SettleOutcome) => PrimitiveValueExpression]
> = [
  ['id', 'uuid', (o) => o.delivery.id],
  ['claim', 'uuid', (o) => o.delivery.claim],
  ['attempt', 'int4', (o) => o.delivery.attempt],
  ['rule', 'text', (o) => o.delivery.rule],
  ['state', 'text', (o) => o.settlement.state],
  [
    'retry_ms',
    'int8',
    (o) => (o.settlement.state === 'failed' ? Math.max(0, Math.round(o.settlement.retryInMs)) : null),
  ],
  ['started_at', 'timestamptz', (o) => o.attempt.startedAt.toISOString()],
  ['status', 'int4', (o) => o.attempt.status],
  ['ms', 'float8', (o) => o.attempt.ms],
  [
    'error',
    'text',
    (o) => (o.attempt.error === null ? null : storable(o.attempt.error.slice(0, DELIVERY_ERROR_LIMITS.maxLength))),
  ],
  // A consumer's answer is outside bytes: text PostgreSQL refuses must not fail the batch.
  ['excerpt', 'text', (o) => storableOrNull(o.attempt.excerpt)],
  ['content_type', 'text', (o) => storableOrNull(o.attempt.contentType)],
];

/**
 * The settling of a batch of finished attempts, as CTEs (input, settled, recorded) for a statement
 * to start with: each delivery whose claim still holds moves on, and every attempt is recorded (a
 * claim taken over still leaves its attempt in the history, as long as the delivery exists).
 */
function settleCtes(outcomes: readonly SettleOutcome[]): FragmentSqlToken {
  const arrays = SETTLE_INPUT.map(([, type, value]) => sql.array(outcomes.map(value), type));
  const names = SETTLE_INPUT.map(([name]) => sql.identifier([name]));
  return sql.fragment`
    input AS (
      SELECT * FROM unnest(${sql.join(arrays, sql.fragment`, `)}) AS t(${sql.join(names, sql.fragment`, `)})
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
      ${
        request.holding === undefined || request.holding.length === 0
          ? sql.fragment``
          : sql.fragment`AND deliveries.id <> ALL(${sql.array([...request.holding], 'uuid')})`
      }
    ORDER BY deliveries.seq
    LIMIT ${request.limit}
    FOR UPDATE SKIP LOCKED
  )`;

// Ordered: only the head of the rule's queue, and only when it is due. SKIP LOCKED would hand a
// second instance the next row while the head is locked, so instances take turns on an advisory

export function createDeliveryClaims(pool: DatabasePool): DeliveryClaims {
  /**
   * One statement for a batch of finished attempts: each delivery whose claim still holds moves
   * on, and every attempt is recorded (a claim taken over still leaves its attempt in the history,
   * as long as the delivery exists).
   */
  async function settleMany(outcomes: readonly SettleOutcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await pool.query(sql.type(rawRows)`
      WITH ${settleCtes(outcomes)}
      SELECT count(*) FROM recorded
    `);
  }
  // lock instead; the head stays "delivering" (not due) while one is in flight.
  const claimOrdered = (request: ClaimRequest): Promise<ClaimedDelivery[]> =>
    pool.transaction(async (tx) => {
      const locked = await tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`
        SELECT pg_try_advisory_xact_lock(hashtext(${`switchboard-forward:${request.rule}`})) AS locked
      `);
      if (!locked) return [];
      const rows = await tx.any(sql.type(rawRows)`
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
    const rows = await pool.any(sql.type(rawRows)`
      WITH ${dueRows(request, false)}
      ${claimUpdate(request)}
    `);
    return claimedFromRows(rows, request.claim);
  }
  /**
   * Extends the leases of rows still in flight (docs/adr/forward-cost-per-delivery.md, "Claims
   * are leases"): answers the ids whose claim still held, so were extended.
   */
  async function renew(ids: readonly string[], claim: string, claimTimeoutMs: number): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await pool.any(sql.type(renewedRow)`
      UPDATE deliveries SET next_attempt_at = clock_timestamp() + ${claimTimeoutMs} * interval '1 millisecond'
      WHERE deliveries.id = ANY(${sql.array([...ids], 'uuid')}) AND deliveries.claim = ${claim}
        AND deliveries.state = 'delivering'
      RETURNING deliveries.id
    `);
    return rows.map((row) => row.id);
  }
  return {
    claim,
    settleMany,
    renew,
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
      const rows = await pool.any(sql.type(rawRows)`
        WITH ${settleCtes(outcomes)}, ${dueRows(request, true)}
        ${claimUpdate(request)}
      `);
      return claimedFromRows(rows, request.claim);
    },
  };
}
