/**
 * Forwarding's outbox as the dispatcher and the API see it: claiming due deliveries (FOR UPDATE
 * SKIP LOCKED, so instances sharing the database never claim the same row), settling attempts,
 * manual retries, pause state, and each rule's health. The rows themselves are written by the
 * event store's insert, in the event's own statement.
 *
 * Claiming and settling (delivery-claims.ts), reading deliveries (delivery-rows.ts) and what they
 * add up to (delivery-health.ts) are modules of their own; the state changes an operator asks for
 * (retry, pause, cancelling what no rule takes any more) are here.
 */
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { ForwardState } from '../../../generated/constants.ts';
import type { Delivery } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import type { ClaimConnection } from './claim-connection.ts';
import { assertStorePool } from '../database/database.ts';
import {
  createDeliveryClaims,
  type AttemptRecord,
  type ClaimedDelivery,
  type ClaimRequest,
  type SettleOutcome,
  type Settlement,
} from './delivery-claims.ts';
import { forwardStates, ruleHealth, type ListedEvent, type RuleHealth } from './delivery-health.ts';
import { deliveriesOfEvent, getDelivery, uuidOrNull } from './delivery-rows.ts';

/** The attempt an interrupted reply is recorded with (deadInterruptedReplies). */
const INTERRUPTED_REPLY =
  'interrupted: switchboard stopped while waiting for the reply; not sent again (reply.retry is off)';

type RetryOutcome = { kind: 'retried'; delivery: Delivery } | { kind: 'not_found' } | { kind: 'busy'; state: string };

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
  /**
   * Extends the claims of deliveries still in flight by claimTimeoutMs from now; answers the ids
   * whose claim still held (a claim taken over, or settled meanwhile, is left alone).
   */
  renew(ids: readonly string[], claim: string, claimTimeoutMs: number): Promise<string[]>;
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
  /**
   * At start-up: reply attempts without reply.retry that a stopped process left `delivering`
   * (written claimed with no lease, their event received over `olderThanMs` ago, past any wait)
   * become dead, with an attempt saying so. Never sent again on their own: a reply is sent at most
   * once, and an operator may still retry one. Answers how many, per rule.
   */
  deadInterruptedReplies(olderThanMs: number): Promise<Map<string, number>>;
  /** Each event of a list page's forwarding across its rules; events no rule took are absent. */
  forwardStates(events: readonly ListedEvent[]): Promise<Map<string, ForwardState>>;
}

/** A failed, dead or pending delivery becomes pending now, with a fresh max_attempts. */
async function retryDelivery(pool: DatabasePool, id: string): Promise<RetryOutcome> {
  const uuid = uuidOrNull(id);
  if (uuid === null) throw invalidArgument('id must be a delivery id (a UUID)');
  const updated = await pool.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    UPDATE deliveries SET state = 'pending', next_attempt_at = clock_timestamp(), budget_start = deliveries.attempt_count
    WHERE deliveries.id = ${uuid} AND deliveries.state IN ('pending', 'failed', 'dead')
    RETURNING deliveries.id
  `);
  if (updated === null) {
    const current = await getDelivery(pool, uuid);
    return current === null ? { kind: 'not_found' } : { kind: 'busy', state: current.state };
  }
  const delivery = await getDelivery(pool, uuid);
  return delivery === null ? { kind: 'not_found' } : { kind: 'retried', delivery };
}

/** DeliveryRepository.deadInterruptedReplies. */
async function deadInterruptedReplies(pool: DatabasePool, olderThanMs: number): Promise<Map<string, number>> {
  // Only a reply attempt without a lease is 'delivering' with no next_attempt_at: a claim the
  // outbox takes always has one, and so does a reply with reply.retry.
  const rows = await pool.any(sql.type(z.object({ rule: z.string(), interrupted: z.coerce.number() }))`
      WITH interrupted AS (
        UPDATE deliveries SET state = 'dead', claim = NULL
        WHERE deliveries.state = 'delivering' AND deliveries.next_attempt_at IS NULL
          AND deliveries.event_received_at < clock_timestamp() - ${olderThanMs}::float8 * interval '1 millisecond'
        RETURNING deliveries.id, deliveries.event_received_at, deliveries.attempt_count, deliveries.rule
      ), recorded AS (
        INSERT INTO delivery_attempts (delivery_id, event_received_at, attempt, rule, started_at, error)
        SELECT interrupted.id, interrupted.event_received_at, interrupted.attempt_count, interrupted.rule,
          interrupted.event_received_at, ${INTERRUPTED_REPLY}
        FROM interrupted
        ON CONFLICT (delivery_id, attempt, event_received_at) DO NOTHING
      )
      SELECT interrupted.rule, count(*) AS interrupted FROM interrupted GROUP BY interrupted.rule
    `);
  return new Map(rows.map((row) => [row.rule, row.interrupted]));
}

/**
 * `claims` carries the dispatcher's claiming and settling statements (claim-connection.ts); the
 * rest runs on the store's pool.
 */
export function createDeliveryRepository(pool: DatabasePool, claims: ClaimConnection): DeliveryRepository {
  assertStorePool(pool);
  const { claim, settleAndClaim, settleMany, renew } = createDeliveryClaims(claims);

  return {
    claim,
    settleAndClaim,
    renew,
    settle(delivery, attempt, settlement) {
      return settleMany([{ delivery, attempt, settlement }]);
    },

    settleMany,
    forEvent: (eventId) => deliveriesOfEvent(pool, eventId),

    get: (id) => getDelivery(pool, id),

    retry: (id) => retryDelivery(pool, id),

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
    health: (rules) => ruleHealth(pool, rules),

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
    deadInterruptedReplies: (olderThanMs) => deadInterruptedReplies(pool, olderThanMs),
    forwardStates: (events) => forwardStates(pool, events),
  };
}
