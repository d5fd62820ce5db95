/**
 * Claims are leases. A claimed delivery is due again once its claim_timeout_ms runs out, so that
 * another instance takes over the work of one that died; an instance that is only slow (a
 * consumer that answers late, an event loop or a database slowed by load) must not lose its
 * claims that way, or the delivery is sent twice. While an attempt is in flight (sending, or
 * waiting to be settled) its lease is extended well before it runs out; a dead instance extends
 * nothing, so its work is still taken over within claim_timeout_ms.
 *
 * The lease's end is tracked on this process's monotonic clock from the moment the claiming (or
 * extending) statement was sent, which is never later than the database's own reckoning: a
 * delivery whose lease ran out on that clock is not sent (docs/adr/forward-cost-per-delivery.md).
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log/logger.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';

/** A rule's worker as far as its leases go (rule-worker.ts's RuleWorker). */
export interface LeaseHolder {
  rule: Pick<ForwardRuleConfig, 'name' | 'claimTimeoutMs'>;
  /** Claimed and not yet settled, by id: when its lease runs out (performance.now()). */
  leases: Map<string, number>;
}

/** A lease is extended once less than this share of claim_timeout_ms is left of it. */
const RENEW_WHEN_LEFT = 2 / 3;
/** Leases are looked at this many times per (shortest) claim_timeout_ms. */
const CHECKS_PER_TIMEOUT = 4;

export interface ClaimLeasesDeps {
  workers: Iterable<LeaseHolder>;
  deliveries: Pick<DeliveryRepository, 'renew'>;
  claimId: string;
  logger: Logger;
}

export interface ClaimLeases {
  stop(): void;
}

/** Takes the leases of deliveries a claim statement sent at `sentAt` (performance.now()) returned. */
export function leaseTaken(worker: LeaseHolder, ids: readonly string[], sentAt: number): void {
  for (const id of ids) worker.leases.set(id, sentAt + worker.rule.claimTimeoutMs);
}

/** Whether the claim is surely still this instance's: its lease has not run out on this clock. */
export const leaseHolds = (worker: LeaseHolder, id: string): boolean =>
  (worker.leases.get(id) ?? -Infinity) > performance.now();

export function startClaimLeases(deps: ClaimLeasesDeps): ClaimLeases {
  const workers = [...deps.workers];
  const shortest = Math.min(...workers.map((worker) => worker.rule.claimTimeoutMs));
  const renewing = new Set<LeaseHolder>();

  async function renew(worker: LeaseHolder): Promise<void> {
    const { claimTimeoutMs } = worker.rule;
    const now = performance.now();
    const due = [...worker.leases].filter(([, until]) => until - now < claimTimeoutMs * RENEW_WHEN_LEFT);
    if (due.length === 0) return;
    renewing.add(worker);
    const sentAt = performance.now();
    try {
      const kept = new Set(
        await deps.deliveries.renew(
          due.map(([id]) => id),
          deps.claimId,
          claimTimeoutMs,
        ),
      );
      for (const [id] of due) {
        // Settled meanwhile (gone from the map), extended, or taken over: then it must not be sent.
        if (worker.leases.has(id)) worker.leases.set(id, kept.has(id) ? sentAt + claimTimeoutMs : -Infinity);
      }
    } catch (error) {
      // The next check tries again; a lease that runs out meanwhile is another instance's to take.
      deps.logger.warn({ err: error, rule: worker.rule.name }, 'could not extend forward claims in flight');
    } finally {
      renewing.delete(worker);
    }
  }

  const timer = setInterval(() => {
    for (const worker of workers) if (worker.leases.size > 0 && !renewing.has(worker)) void renew(worker);
  }, shortest / CHECKS_PER_TIMEOUT);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
