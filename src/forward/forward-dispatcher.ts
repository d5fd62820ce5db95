/**
 * The dispatcher: sends each rule's queued deliveries to its consumer. The live bus wakes it when
 * events commit; a slow poll catches what the bus missed (another instance's retries, a lost
 * notification). Each rule keeps at most `concurrency` attempts in flight (one when ordered), and
 * claims only as many rows as it can send, so a consumer down for hours costs rows in the
 * database, not memory.
 *
 * The work is split by responsibility: rule-cycle.ts claims and settles (one statement per cycle),
 * forward-attempt.ts sends, retry-schedule.ts schedules retries and recovery; this module runs
 * them per rule, wakes them, and stops them.
 */
import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import type { Outbound } from '../outbound/deliver-event.ts';
import type { AttemptRecord, ClaimedDelivery } from '../store/outbox/delivery-claims.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import { sendAttempt, type AttemptOutcome } from './forward-attempt.ts';
import { leaseHolds, startClaimLeases } from './claim-leases.ts';
import { retrySchedule } from './retry-schedule.ts';
import { ruleCycles, ruleWorker, type RuleWorker } from './rule-cycle.ts';

/** Fallback poll: due retries and rows the bus did not announce are found at least this often. */
const POLL_INTERVAL_MS = 1_000;

export interface ForwardDispatcherDeps {
  rules: readonly ForwardRuleConfig[];
  /** Each rule's `to`, parsed and checked at start-up (checkForwardTargets). */
  targets: ReadonlyMap<string, URL>;
  deliveries: Pick<DeliveryRepository, 'settleAndClaim' | 'dueNow' | 'renew'>;
  outbound: Pick<Outbound, 'deliver'>;
  /** The live bus: called with a listener, returns the unsubscribe. */
  subscribe: (listener: () => void) => () => void;
  logger: Logger;
  /** Seam for metrics and the serve terminal: every finished attempt, once it is settled. */
  onAttempt?: (attempt: SettledAttempt) => void;
  pollIntervalMs?: number;
  random?: () => number;
}

/** A finished attempt, as recorded: what the metrics count and the serve terminal prints. */
export interface SettledAttempt {
  rule: string;
  delivery: ClaimedDelivery;
  record: AttemptRecord;
  outcome: AttemptOutcome;
  seconds: number;
}

export interface ForwardDispatcher {
  /** Look for due deliveries now (after a retry or resume). */
  wake(rule?: string): void;
  /**
   * Stops claiming, lets attempts in flight finish for up to drainMs, then cuts the rest short:
   * their deliveries are released (due again at once) for this or another instance.
   */
  stop(drainMs: number): Promise<void>;
}

// Over 80 lines: the wiring of one dispatcher (its rules, shutdown signal and in-flight set, which
// attempts, cycles and stop all share); the work itself lives in rule-cycle, forward-attempt and
// retry-schedule.
export function startForwardDispatcher(deps: ForwardDispatcherDeps): ForwardDispatcher {
  const random = deps.random ?? Math.random;
  const pollMs = deps.pollIntervalMs ?? POLL_INTERVAL_MS;
  const cancel = new AbortController();
  // Attempts in flight share this one signal (sendRequest hangs one listener on it for all of
  // them); the bound stays at the rules' concurrency summed, in case that ever changes.
  setMaxListeners(
    deps.rules.reduce((sum, rule) => sum + (rule.ordered ? 1 : rule.concurrency), 1),
    cancel.signal,
  );
  let stopping = false;
  const isStopping = (): boolean => stopping;
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>): void => {
    inFlight.add(work);
    const done = (): void => void inFlight.delete(work);
    work.then(done, done);
  };

  const workers = new Map<string, RuleWorker>();
  for (const rule of deps.rules) {
    const url = deps.targets.get(rule.name);
    if (url === undefined) throw new Error(`forward rule ${rule.name} has no checked target`);
    workers.set(rule.name, ruleWorker(rule, url));
  }

  // One claim id per process run: rows this instance holds are recognisable, and a claim that
  // expired (another instance took over) no longer matches.
  const claimId = randomUUID();
  const leases = startClaimLeases({
    workers: workers.values(),
    deliveries: deps.deliveries,
    claimId,
    logger: deps.logger,
  });
  const cycles = ruleCycles({
    deliveries: deps.deliveries,
    logger: deps.logger,
    claimId,
    stopping: isStopping,
    launch,
    track,
  });
  const schedule = retrySchedule({
    deliveries: deps.deliveries,
    logger: deps.logger,
    stopping: isStopping,
    cycle: (worker) => cycles.cycle(worker),
  });

  /** One attempt, its settle and what it schedules; the slot is free once the consumer answered. */
  async function attempt(worker: RuleWorker, delivery: ClaimedDelivery): Promise<void> {
    try {
      await attemptHeld(worker, delivery);
    } finally {
      // Settled, or its settle failed: either way the lease is no longer extended (a delivery
      // left unsettled is claimed again when it runs out).
      worker.leases.delete(delivery.id);
    }
  }

  async function attemptHeld(worker: RuleWorker, delivery: ClaimedDelivery): Promise<void> {
    if (!leaseHolds(worker, delivery.id)) {
      // The claim may already be another instance's (the claim statement came back after its
      // lease ran out): not sent; the delivery is due again for whoever claims it next.
      worker.running -= 1;
      deps.logger.warn({ deliveryId: delivery.id, rule: worker.rule.name }, 'forward claim ran out before its send');
      return;
    }
    let finished;
    try {
      finished = await sendAttempt({
        rule: worker.rule,
        url: worker.url,
        delivery,
        outbound: deps.outbound,
        logger: deps.logger,
        signal: cancel.signal,
        random,
      });
    } finally {
      worker.running -= 1;
    }
    // The settle goes with the rule's next claim.
    await cycles.settle(worker, { delivery, attempt: finished.record, settlement: finished.settlement });
    deps.onAttempt?.({
      rule: worker.rule.name,
      delivery,
      record: finished.record,
      outcome: finished.settlement.state,
      seconds: finished.seconds,
    });
    await schedule.afterSettle(worker, delivery, finished);
  }

  function launch(worker: RuleWorker, delivery: ClaimedDelivery): void {
    worker.running += 1;
    const run = attempt(worker, delivery)
      .catch((error: unknown) => {
        // Settling failed (database down): the claim expires and the delivery is claimed again.
        deps.logger.warn(
          { err: error, deliveryId: delivery.id, rule: worker.rule.name },
          'could not record a forward attempt',
        );
      })
      .finally(() => cycles.cycle(worker));
    track(run);
  }

  /** Waits until nothing is in flight, including attempts launched while waiting. */
  async function settleAll(): Promise<void> {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  }

  const pumpAll = (): void => {
    for (const worker of workers.values()) cycles.cycle(worker);
  };
  const unsubscribe = deps.subscribe(pumpAll);
  const poll = setInterval(pumpAll, pollMs);
  poll.unref();
  pumpAll();

  return {
    wake(rule) {
      if (rule === undefined) {
        pumpAll();
        return;
      }
      const worker = workers.get(rule);
      if (worker) cycles.cycle(worker);
    },
    async stop(drainMs) {
      stopping = true;
      unsubscribe();
      clearInterval(poll);
      for (const worker of workers.values()) clearTimeout(worker.retryTimer);
      // Held settles go now: from here on every cycle settles at once.
      for (const worker of workers.values()) cycles.cycle(worker, true);
      const drained = settleAll();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, drainMs);
      });
      await Promise.race([drained, deadline]);
      clearTimeout(timer);
      // What is still in flight is cut short and released (settled as due now).
      cancel.abort();
      await settleAll();
      // Kept up to here: attempts draining still hold their claims.
      leases.stop();
    },
  };
}
