/**
 * Scheduling after a settled attempt: a failed delivery's retry gets a timer on this instance (so
 * it need not wait for the poll), a dead one is logged, and the first success after failures makes
 * whatever waits out a backoff due at once.
 */
import type { Logger } from '../log/logger.ts';
import { displayTarget } from '../outbound/send-request.ts';
import type { ClaimedDelivery } from '../store/outbox/delivery-claims.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import type { FinishedAttempt } from './forward-attempt.ts';
import type { RuleWorker } from './rule-worker.ts';

export interface RetryScheduleDeps {
  deliveries: Pick<DeliveryRepository, 'dueNow'>;
  logger: Logger;
  stopping: () => boolean;
}

export interface RetrySchedule {
  /** What a settled attempt means for the rule's schedule. */
  afterSettle(worker: RuleWorker, delivery: ClaimedDelivery, finished: FinishedAttempt): Promise<void>;
}

export function retrySchedule(deps: RetryScheduleDeps): RetrySchedule {
  /**
   * The consumer answered again: whatever waits out a backoff is due now, so the backlog drains at
   * the rule's concurrency (in order, when ordered) within a claim of the first success instead
   * of each delivery waiting out its own, by then long, backoff.
   */
  async function recovered(worker: RuleWorker): Promise<void> {
    try {
      const due = await deps.deliveries.dueNow(worker.rule.name);
      if (due > 0) deps.logger.info({ rule: worker.rule.name, due }, 'forward target answered again; retrying now');
    } catch (error) {
      // The next success tries again; meanwhile the backoffs run as they would have.
      worker.backedOff();
      deps.logger.warn({ err: error, rule: worker.rule.name }, 'could not make waiting forward deliveries due');
    }
  }

  async function afterSettle(worker: RuleWorker, delivery: ClaimedDelivery, finished: FinishedAttempt): Promise<void> {
    const { rule } = worker;
    const { record, settlement } = finished;
    if (settlement.state === 'failed') {
      deps.logger.info(
        {
          rule: rule.name,
          deliveryId: delivery.id,
          attempt: delivery.attempt,
          target: displayTarget(worker.url.href),
          error: record.error,
          retryInMs: settlement.retryInMs,
        },
        'forward attempt failed; retrying later',
      );
      worker.backedOff();
      // A timer for this instance's own retry, so it need not wait for the poll.
      if (!deps.stopping()) worker.wakeAt(settlement.retryInMs);
    } else if (settlement.state === 'delivered' && !deps.stopping() && worker.recovering()) {
      await recovered(worker);
    } else if (settlement.state === 'dead') {
      deps.logger.warn(
        { rule: rule.name, deliveryId: delivery.id, attempts: delivery.attempt, error: record.error },
        'forward delivery is dead after max_attempts',
      );
    }
  }

  return { afterSettle };
}
