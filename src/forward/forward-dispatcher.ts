/**
 * The dispatcher: sends each rule's queued deliveries to its consumer. The live bus wakes it when
 * events commit; a slow poll catches what the bus missed (another instance's retries, a lost
 * notification). Each rule keeps at most `concurrency` attempts in flight (one when ordered), and
 * claims only as many rows as it can send, so a consumer down for hours costs rows in the
 * database, not memory.
 *
 * The work is split by responsibility: a RuleWorker (rule-worker.ts) claims and settles for its
 * rule (one statement per cycle), forward-attempt.ts sends, retry-schedule.ts schedules retries
 * and recovery; this module makes a worker per rule, wakes them, and stops them.
 */
import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import type { Outbound } from '../outbound/deliver-event.ts';
import type { AttemptRecord, ClaimedDelivery } from '../store/outbox/delivery-claims.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import { sendAttempt, type AttemptOutcome, type FinishedAttempt } from './forward-attempt.ts';
import { leaseHolds, startClaimLeases } from './claim-leases.ts';
import { retrySchedule } from './retry-schedule.ts';
import { RuleWorker } from './rule-worker.ts';

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
  const schedule = retrySchedule({ deliveries: deps.deliveries, logger: deps.logger, stopping: isStopping });

  /** One send; not made when the claim may already be another instance's. */
  function send(worker: RuleWorker, delivery: ClaimedDelivery): Promise<FinishedAttempt | undefined> {
    if (!leaseHolds(worker, delivery.id)) {
      // The claim statement came back after its lease ran out: the delivery is due again for
      // whoever claims it next.
      deps.logger.warn({ deliveryId: delivery.id, rule: worker.rule.name }, 'forward claim ran out before its send');
      return Promise.resolve(undefined);
    }
    return sendAttempt({
      rule: worker.rule,
      url: worker.url,
      delivery,
      outbound: deps.outbound,
      logger: deps.logger,
      signal: cancel.signal,
      random,
    });
  }

  async function settled(worker: RuleWorker, delivery: ClaimedDelivery, finished: FinishedAttempt): Promise<void> {
    deps.onAttempt?.({
      rule: worker.rule.name,
      delivery,
      record: finished.record,
      outcome: finished.settlement.state,
      seconds: finished.seconds,
    });
    await schedule.afterSettle(worker, delivery, finished);
  }

  // One claim id per process run: rows this instance holds are recognisable, and a claim that
  // expired (another instance took over) no longer matches.
  const claimId = randomUUID();
  const workerDeps = {
    deliveries: deps.deliveries,
    logger: deps.logger,
    claimId,
    stopping: isStopping,
    send,
    settled,
    track,
  };
  const workers = new Map<string, RuleWorker>();
  for (const rule of deps.rules) {
    const url = deps.targets.get(rule.name);
    if (url === undefined) throw new Error(`forward rule ${rule.name} has no checked target`);
    workers.set(rule.name, new RuleWorker(rule, url, workerDeps));
  }
  const leases = startClaimLeases({
    workers: workers.values(),
    deliveries: deps.deliveries,
    claimId,
    logger: deps.logger,
  });

  /** Waits until nothing is in flight, including attempts launched while waiting. */
  async function settleAll(): Promise<void> {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  }

  const pumpAll = (): void => {
    for (const worker of workers.values()) worker.cycle();
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
      if (worker) worker.cycle();
    },
    async stop(drainMs) {
      stopping = true;
      unsubscribe();
      clearInterval(poll);
      // Retry timers stop; held settles go now: from here on every cycle settles at once.
      for (const worker of workers.values()) worker.stop();
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
