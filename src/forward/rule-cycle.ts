/**
 * Claiming and settling, per rule, in cycles: one statement settles the attempts that finished
 * since the last one and claims the next due rows (docs/adr/forward-cost-per-delivery.md). Under
 * load a cycle waits until half the rule's slots are free (for at most SETTLE_HOLD_MS), and claims
 * half the slots more than are free, kept queued here (leased, see claim-leases.ts) for the next
 * free slots: each statement carries about `concurrency` deliveries. A rule with nothing in
 * flight claims at once.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log/logger.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import { commitBatch, waitInQueue, type BatchCommit, type Waiting } from '../shared/batch-commit.ts';
import type { ClaimedDelivery, SettleOutcome } from '../store/outbox/delivery-claims.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import { leaseTaken, type LeaseHolder } from './claim-leases.ts';

/**
 * Longest a finished attempt waits to be settled while its rule's other attempts are still in
 * flight, so that one statement settles several. Far below any claim_timeout_ms.
 */
const SETTLE_HOLD_MS = 20;

/** One rule's dispatch state. */
export interface RuleWorker extends LeaseHolder {
  rule: ForwardRuleConfig;
  url: URL;
  /** Attempts sending now; a finished one frees its slot as it joins `finished`. */
  running: number;
  /** Claimed ahead, oldest first: launched as slots free, before the next claim. */
  queued: ClaimedDelivery[];
  /** Finished attempts waiting for the next cycle to settle them. */
  finished: Waiting<SettleOutcome, undefined>[];
  /** A cycle's statement is running. */
  cycling: boolean;
  again: boolean;
  holdTimer: NodeJS.Timeout | undefined;
  retryTimer: NodeJS.Timeout | undefined;
  retryAt: number;
  /** Deliveries of this rule may be waiting out a backoff (true at start: an earlier run's may). */
  backedOff: boolean;
}

export function ruleWorker(rule: ForwardRuleConfig, url: URL): RuleWorker {
  return {
    rule,
    url,
    running: 0,
    queued: [],
    finished: [],
    cycling: false,
    again: false,
    holdTimer: undefined,
    retryTimer: undefined,
    retryAt: Infinity,
    backedOff: true,
    leases: new Map(),
  };
}

export interface RuleCycleDeps {
  deliveries: Pick<DeliveryRepository, 'settleAndClaim'>;
  logger: Logger;
  /** This process run's claim id: rows it holds are recognisable, an expired claim no longer matches. */
  claimId: string;
  stopping: () => boolean;
  /** Starts sending a claimed delivery. */
  launch: (worker: RuleWorker, delivery: ClaimedDelivery) => void;
  /** Tracks work a shutdown must wait for. */
  track: (work: Promise<void>) => void;
}

export interface RuleCycles {
  /** One round trip for the rule, when there is something to settle or room to claim. */
  cycle(worker: RuleWorker, force?: boolean): void;
  /** A finished attempt's outcome, settled by the rule's next cycle; resolves once it committed. */
  settle(worker: RuleWorker, outcome: SettleOutcome): Promise<void>;
}

const roomOf = (worker: RuleWorker): number =>
  worker.rule.ordered ? (worker.running === 0 ? 1 : 0) : worker.rule.concurrency - worker.running;

/** How many rows an unordered rule claims beyond its free slots (none for an ordered one). */
const aheadOf = (worker: RuleWorker): number => (worker.rule.ordered ? 0 : Math.floor(worker.rule.concurrency / 2));

// Over 80 lines: cycle() and its statement share the rule's state and the one settle-only fallback.
export function ruleCycles(deps: RuleCycleDeps): RuleCycles {
  /**
   * After a cycle's statement failed, its attempts are settled row by row, so one row the
   * database refuses (or a row whose delivery went away) never blocks another. A healthy delivery
   * left unsettled would be claimed again at its claim timeout and sent twice.
   */
  const settleOnly = (outcome: SettleOutcome): Promise<undefined> =>
    deps.deliveries.settleAndClaim([outcome], null).then(() => undefined);
  const onIsolate = (error: unknown, size: number): void =>
    deps.logger.warn({ err: error, attempts: size }, 'settling a batch failed; settling its rows one by one');

  /** Claimed rows go out as slots free (during a shutdown too: each is sent, or cut short and released). */
  function launchQueued(worker: RuleWorker): void {
    while (worker.queued.length > 0 && roomOf(worker) > 0) {
      const next = worker.queued.shift();
      if (next !== undefined) deps.launch(worker, next);
    }
  }

  function settle(worker: RuleWorker, outcome: SettleOutcome): Promise<void> {
    const settled = waitInQueue(worker.finished, outcome);
    cycle(worker);
    return settled;
  }

  /**
   * With attempts still in flight, a cycle claims only once half the slots are free, and settles
   * early (without claiming) only after SETTLE_HOLD_MS, so under load each statement carries
   * several deliveries.
   */
  function cycle(worker: RuleWorker, force = false): void {
    launchQueued(worker);
    if (worker.cycling) {
      worker.again = true;
      return;
    }
    const stopping = deps.stopping();
    const room = stopping || worker.queued.length > 0 ? 0 : roomOf(worker);
    const claimable = room > 0 && (worker.running === 0 || room >= Math.ceil(worker.rule.concurrency / 2));
    if (!claimable && worker.finished.length === 0) return;
    if (!claimable && !force && !stopping) {
      worker.holdTimer ??= setTimeout(() => {
        worker.holdTimer = undefined;
        cycle(worker, true);
      }, SETTLE_HOLD_MS);
      return;
    }
    clearTimeout(worker.holdTimer);
    worker.holdTimer = undefined;
    worker.cycling = true;
    const cycling = run(worker, worker.finished.splice(0), claimable ? room + aheadOf(worker) : 0).finally(() => {
      worker.cycling = false;
      if (worker.again || worker.finished.length > 0) {
        worker.again = false;
        cycle(worker);
      }
    });
    // Tracked like an attempt: what it claims during a shutdown is launched, then released.
    deps.track(cycling);
  }

  /** The cycle's statement: settles `batch`, claims up to `limit` rows, and launches them. */
  async function run(worker: RuleWorker, batch: Waiting<SettleOutcome, undefined>[], limit: number): Promise<void> {
    const { rule } = worker;
    const request =
      limit === 0
        ? null
        : {
            rule: rule.name,
            limit,
            claimTimeoutMs: rule.claimTimeoutMs,
            ordered: rule.ordered,
            claim: deps.claimId,
            holding: [...worker.leases.keys()],
          };
    let claimed: ClaimedDelivery[] = [];
    const sentAt = performance.now();
    const statement: BatchCommit<SettleOutcome, undefined> = {
      all: async (outcomes) => {
        try {
          claimed = await deps.deliveries.settleAndClaim(outcomes, request);
        } catch (error) {
          // Nothing of the statement happened; the poll claims again.
          if (outcomes.length === 0) {
            deps.logger.warn({ err: error, rule: rule.name }, 'could not claim forward deliveries; the poll retries');
          }
          throw error;
        }
        return outcomes.map(() => undefined);
      },
      one: settleOnly,
      onIsolate,
    };
    await commitBatch(batch, statement);
    leaseTaken(
      worker,
      claimed.map((delivery) => delivery.id),
      sentAt,
    );
    worker.queued.push(...claimed);
    launchQueued(worker);
    // A full claim may have left more due rows behind.
    if (limit > 0 && claimed.length === limit) worker.again = true;
  }

  return { cycle, settle };
}
