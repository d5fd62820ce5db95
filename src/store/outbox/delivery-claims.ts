/**
 * The forward dispatcher's side of the outbox: claiming due deliveries (FOR UPDATE SKIP LOCKED,
 * so instances sharing the database never claim the same row; an advisory lock for ordered
 * rules) and settling finished attempts, batched into as few statements as it can. Each statement
 * is a named prepared statement on the dispatcher's own connections (claim-connection.ts): its
 * text is fixed, and every value, the batch's columns included, is a parameter.
 */
import type { FragmentSqlToken } from 'slonik';
import { DELIVERY_ERROR_LIMITS } from '../../../generated/constants.ts';
import type { ClaimConnection } from './claim-connection.ts';
import { claimedRowFrom } from './claimed-row.ts';
import { OPEN_STATES } from './delivery-rows.ts';
import type { StoredEvent } from '../events/event-store.ts';
import { receivedAtUtc } from '../events/list-statement.ts';
import { storable, storableOrNull } from '../sql/storable-text.ts';

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
 * Static SQL from the store's shared fragments (the open states, the UTC rendering of a
 * timestamp), which carry no values: their text is used as it is.
 */
function staticText(fragment: FragmentSqlToken): string {
  if (fragment.values.length > 0) throw new TypeError('a fragment with values cannot be used as static SQL');
  return fragment.sql;
}

/**
 * The settling's input rows, a column each: its name, its array type, and what each outcome puts
 * in it. The batch is passed as one array per column, $1 to $12, in this order.
 */
const SETTLE_INPUT: ReadonlyArray<
  readonly [name: string, type: string, value: (outcome: SettleOutcome) => string | number | null]
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

const settleValues = (outcomes: readonly SettleOutcome[]): unknown[] =>
  SETTLE_INPUT.map(([, , value]) => outcomes.map(value));

/**
 * The settling of a batch of finished attempts, as CTEs (input, settled, recorded) for a statement
 * to start with: each delivery whose claim still holds moves on, and every attempt is recorded (a
 * claim taken over still leaves its attempt in the history, as long as the delivery exists).
 */
const SETTLE_CTES = `
    input AS (
      SELECT * FROM unnest(${SETTLE_INPUT.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
        AS t(${SETTLE_INPUT.map(([name]) => name).join(', ')})
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

/** A claim's own parameters, numbered from `from`: rule, claim id, claim timeout, rows held, limit. */
const claimParams = (from: number) => ({
  rule: `$${from}`,
  claim: `$${from + 1}::uuid`,
  timeoutMs: `$${from + 2}::float8`,
  holding: `$${from + 3}::uuid[]`,
  limit: `$${from + 4}::int8`,
});
type ClaimParams = ReturnType<typeof claimParams>;

const claimValues = (request: ClaimRequest): unknown[] => [
  request.rule,
  request.claim,
  request.claimTimeoutMs,
  [...(request.holding ?? [])],
  request.limit,
];

const notPaused = (rule: string) =>
  `NOT EXISTS (SELECT 1 FROM forward_rule_state WHERE forward_rule_state.rule = ${rule} AND forward_rule_state.paused)`;

const claimUpdate = (p: ClaimParams) => `
  UPDATE deliveries SET state = 'delivering', attempt_count = deliveries.attempt_count + 1, claim = ${p.claim},
    next_attempt_at = clock_timestamp() + ${p.timeoutMs} * interval '1 millisecond'
  FROM due, events WHERE deliveries.id = due.id AND events.id = deliveries.event_id
  RETURNING deliveries.id AS delivery_id, deliveries.rule, deliveries.attempt_count, deliveries.budget_start, deliveries.seq,
    events.id, events.provider, events.event_type, events.trust_mode, events.verified, events.payload_size,
    ${staticText(receivedAtUtc('events'))} AS received_at_utc, events.passed_check, events.received_size,
    events.verify_detail, events.external_id, events.content_type, events.source_ip, events.headers, events.payload,
    events.summary, events.request_method, events.request_path, events.request_query, events.response_status,
    events.handshake
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

/**
 * Due rows of an unordered rule, oldest first, none of those its claimer still holds; with
 * `settling`, none of the rows being settled in the same statement either.
 */
const dueRows = (p: ClaimParams, settling: boolean) => `
  due AS (
    SELECT deliveries.id FROM deliveries
    WHERE deliveries.rule = ${p.rule} AND deliveries.state IN ${staticText(OPEN_STATES)}
      AND deliveries.next_attempt_at <= clock_timestamp() AND ${notPaused(p.rule)}
      ${settling ? 'AND NOT EXISTS (SELECT 1 FROM input WHERE input.id = deliveries.id)' : ''}
      AND deliveries.id <> ALL(${p.holding})
    ORDER BY deliveries.seq
    LIMIT ${p.limit}
    FOR UPDATE SKIP LOCKED
  )`;

/**
 * The statements, each under a name of its own; a name is bound to its text for the life of a
 * connection, so a changed text needs a new name (the version suffix).
 */
const SETTLE = { name: 'switchboard_forward_settle_v1', text: `WITH ${SETTLE_CTES} SELECT count(*) FROM recorded` };
const SETTLE_AND_CLAIM = {
  name: 'switchboard_forward_settle_claim_v1',
  text: `WITH ${SETTLE_CTES}, ${dueRows(claimParams(SETTLE_INPUT.length + 1), true)} ${claimUpdate(claimParams(SETTLE_INPUT.length + 1))}`,
};
const CLAIM = {
  name: 'switchboard_forward_claim_v1',
  text: `WITH ${dueRows(claimParams(1), false)} ${claimUpdate(claimParams(1))}`,
};
// Ordered: only the head of the rule's queue, and only when it is due. SKIP LOCKED would hand a
// second instance the next row while the head is locked, so instances take turns on an advisory
// lock instead; the head stays "delivering" (not due) while one is in flight.
const ORDERED_LOCK = {
  name: 'switchboard_forward_ordered_lock_v1',
  text: 'SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked',
};
const CLAIM_ORDERED = {
  name: 'switchboard_forward_claim_ordered_v1',
  text: `
    WITH head AS (
      SELECT deliveries.id, deliveries.next_attempt_at FROM deliveries
      WHERE deliveries.rule = $1 AND deliveries.state IN ${staticText(OPEN_STATES)}
      ORDER BY deliveries.seq
      LIMIT 1
      FOR UPDATE
    ), due AS (
      SELECT head.id FROM head WHERE head.next_attempt_at <= clock_timestamp() AND ${notPaused('$1')}
    )
    ${claimUpdate(claimParams(1))}`,
};
/** Extends the leases of rows still in flight whose claim still holds; answers their ids. */
const RENEW = {
  name: 'switchboard_forward_renew_v1',
  text: `
    UPDATE deliveries SET next_attempt_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
    WHERE deliveries.id = ANY($1::uuid[]) AND deliveries.claim = $2::uuid AND deliveries.state = 'delivering'
    RETURNING deliveries.id`,
};

const idOf = (row: unknown): string => {
  const id = typeof row === 'object' && row !== null && 'id' in row ? row.id : undefined;
  if (typeof id !== 'string') throw new TypeError('renew row: id is not text');
  return id;
};

export function createDeliveryClaims(connection: ClaimConnection): DeliveryClaims {
  const run = (statement: { name: string; text: string }, values: readonly unknown[]) =>
    connection.run(statement.name, statement.text, values);

  /**
   * One statement for a batch of finished attempts: each delivery whose claim still holds moves
   * on, and every attempt is recorded (a claim taken over still leaves its attempt in the history,
   * as long as the delivery exists).
   */
  async function settleMany(outcomes: readonly SettleOutcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await run(SETTLE, settleValues(outcomes));
  }

  const claimOrdered = (request: ClaimRequest): Promise<ClaimedDelivery[]> =>
    connection.transaction(async (inTransaction) => {
      const [lock] = await inTransaction(ORDERED_LOCK.name, ORDERED_LOCK.text, [`switchboard-forward:${request.rule}`]);
      const locked = typeof lock === 'object' && lock !== null && 'locked' in lock && lock.locked === true;
      if (!locked) return [];
      // Its text names the rule, the claim id and the timeout only.
      const rows = await inTransaction(CLAIM_ORDERED.name, CLAIM_ORDERED.text, claimValues(request).slice(0, 3));
      return claimedFromRows(rows, request.claim);
    });

  async function claim(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (request.ordered) return claimOrdered(request);
    return claimedFromRows(await run(CLAIM, claimValues(request)), request.claim);
  }

  /**
   * Extends the leases of rows still in flight (docs/adr/forward-cost-per-delivery.md, "Claims
   * are leases"): answers the ids whose claim still held, so were extended.
   */
  async function renew(ids: readonly string[], claim: string, claimTimeoutMs: number): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await run(RENEW, [[...ids], claim, claimTimeoutMs])).map(idOf);
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
      const rows = await run(SETTLE_AND_CLAIM, [...settleValues(outcomes), ...claimValues(request)]);
      return claimedFromRows(rows, request.claim);
    },
  };
}
