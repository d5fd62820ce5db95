/**
 * One forward rule's dispatch, as an object: the deliveries it claimed and has not sent yet, the
 * attempts in flight, the finished ones waiting to be settled, and the cycle that settles and
 * claims in one statement (docs/adr/forward-cost-per-delivery.md). Everything here changes only
 * through its own methods; the dispatcher wakes it, sends for it and stops it.
 *
 * The cycle keeps a rule's sends fed while its statements run: an unordered rule keeps up to two
 * `concurrency` claimed ahead of its free slots (leased, see claim-leases.ts) and claims again
 * once one `concurrency` of that is used, so the next rows arrive while the current ones are sent
 * ("Keeping up" in the ADR). A statement then carries a whole `concurrency` of claims and every
 * settle that finished meanwhile. An ordered rule claims its head alone, once nothing is in
 * flight.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log/logger.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import { commitBatch, waitInQueue, type BatchCommit, type Waiting } from '../shared/batch-commit.ts';
import type { ClaimedDelivery, ClaimRequest, SettleOutcome } from '../store/outbox/delivery-claims.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import { leaseTaken, type LeaseHolder } from './claim-leases.ts';
import type { FinishedAttempt } from './forward-attempt.ts';

/**
 * Longest a finished attempt waits to be settled while its rule's other attempts are still in
 * flight, so that one statement settles several. Far below any claim_timeout_ms.
 */
const SETTLE_HOLD_MS = 20;

export interface RuleWorkerDeps {
  deliveries: Pick<DeliveryRepository, 'settleAndClaim'>;
  logger: Logger;
  /** This process run's claim id: rows it holds are recognisable, an expired claim no longer matches. */
  claimId: string;
  stopping: () => boolean;
  /** Sends one claimed delivery; undefined when it was not sent (its lease ran out first). */
  send: (worker: RuleWorker, delivery: ClaimedDelivery) => Promise<FinishedAttempt | undefined>;
  /** What follows a settled attempt (metrics, the retry schedule). */
  settled: (worker: RuleWorker, delivery: ClaimedDelivery, finished: FinishedAttempt) => Promise<void>;
  /** Tracks work a shutdown must wait for. */
  track: (work: Promise<void>) => void;
}

export class RuleWorker implements LeaseHolder {
  readonly rule: ForwardRuleConfig;
  /** The rule's `to`, parsed and checked at start-up. */
  readonly url: URL;
  readonly leases = new Map<string, number>();
  readonly #deps: RuleWorkerDeps;
  /** Attempts sending now; a finished one frees its slot as it joins `#finished`. */
  #running = 0;
  /** Claimed ahead, oldest first: launched as slots free. */
  #queued: ClaimedDelivery[] = [];
  /** Finished attempts waiting for the next cycle to settle them. */
  #finished: Waiting<SettleOutcome, undefined>[] = [];
  /** A cycle's statement is running; `#again` asks for another once it is done. */
  #cycling = false;
  #again = false;
  #holdTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryAt = Infinity;
  /** Deliveries of this rule may be waiting out a backoff (true at start: an earlier run's may). */
  #backedOff = true;

  constructor(rule: ForwardRuleConfig, url: URL, deps: RuleWorkerDeps) {
    this.rule = rule;
    this.url = url;
    this.#deps = deps;
  }

  /** One round trip for the rule, when there is something to settle or enough to claim. */
  cycle(force = false): void {
    this.#launchQueued();
    if (this.#cycling) {
      this.#again = true;
      return;
    }
    const stopping = this.#deps.stopping();
    const wanted = stopping ? 0 : this.#wanted();
    const claimable = wanted > 0 && wanted >= this.#claimAtLeast();
    if (!claimable && this.#finished.length === 0) return;
    if (!claimable && !force && !stopping) {
      this.#holdTimer ??= setTimeout(() => {
        this.#holdTimer = undefined;
        this.cycle(true);
      }, SETTLE_HOLD_MS);
      return;
    }
    clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
    this.#cycling = true;
    const cycling = this.#run(this.#finished.splice(0), claimable ? wanted : 0).finally(() => {
      this.#cycling = false;
      if (this.#again || this.#finished.length > 0) {
        this.#again = false;
        this.cycle();
      }
    });
    // Tracked like an attempt: what it claims during a shutdown is launched, then released.
    this.#deps.track(cycling);
  }

  /** Stops the retry timer and settles what is held now: from here on every cycle settles at once. */
  stop(): void {
    clearTimeout(this.#retryTimer);
    this.cycle(true);
  }

  /** A timer for this instance's own scheduled retry, so it need not wait for the poll. */
  wakeAt(delayMs: number): void {
    const at = Date.now() + delayMs;
    if (this.#retryTimer !== undefined && this.#retryAt <= at) return;
    clearTimeout(this.#retryTimer);
    this.#retryAt = at;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retryAt = Infinity;
      this.cycle();
    }, delayMs + 5);
    this.#retryTimer.unref();
  }

  /** Some of the rule's deliveries wait out a backoff. */
  backedOff(): void {
    this.#backedOff = true;
  }

  /** After a success: whether deliveries may have been waiting out a backoff until now (asked once). */
  recovering(): boolean {
    const was = this.#backedOff;
    this.#backedOff = false;
    return was;
  }

  /**
   * Rows to claim now: the free slots and the two `concurrency` kept ahead of them, less what is
   * queued. An ordered rule takes its head only when nothing is in flight or queued.
   */
  #wanted(): number {
    const { concurrency, ordered } = this.rule;
    if (ordered) return this.#running === 0 && this.#queued.length === 0 ? 1 : 0;
    return 3 * concurrency - this.#running - this.#queued.length;
  }

  /**
   * A claim waits until it can take a whole `concurrency` (or anything, with nothing in flight or
   * queued: a quiet rule sends each event as soon as it commits), so each statement carries many.
   */
  #claimAtLeast(): number {
    return this.rule.ordered ? 1 : this.rule.concurrency;
  }

  #room(): number {
    return this.rule.ordered ? (this.#running === 0 ? 1 : 0) : this.rule.concurrency - this.#running;
  }

  /** Claimed rows go out as slots free (during a shutdown too: each is sent, or cut short and released). */
  #launchQueued(): void {
    while (this.#queued.length > 0 && this.#room() > 0) {
      const next = this.#queued.shift();
      if (next !== undefined) this.#launch(next);
    }
  }

  #launch(delivery: ClaimedDelivery): void {
    this.#running += 1;
    // One reaction for both ends (a catch and a finally cost three promises more per delivery).
    const run = this.#attempt(delivery).then(
      () => this.cycle(),
      (error: unknown) => {
        // Settling failed (database down): the claim expires and the delivery is claimed again.
        this.#deps.logger.warn(
          { err: error, deliveryId: delivery.id, rule: this.rule.name },
          'could not record a forward attempt',
        );
        this.cycle();
      },
    );
    this.#deps.track(run);
  }

  /** One attempt and its settle; the slot is free once the consumer answered. */
  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    try {
      let finished: FinishedAttempt | undefined;
      try {
        finished = await this.#deps.send(this, delivery);
      } finally {
        this.#running -= 1;
      }
      if (finished === undefined) return;
      // The settle goes with the rule's next claim.
      const settled = waitInQueue(this.#finished, {
        delivery,
        attempt: finished.record,
        settlement: finished.settlement,
      });
      this.cycle();
      await settled;
      await this.#deps.settled(this, delivery, finished);
    } finally {
      // Settled, or its settle failed: either way the lease is no longer extended (a delivery
      // left unsettled is claimed again when it runs out).
      this.leases.delete(delivery.id);
    }
  }

  /** The cycle's statement: settles `batch`, claims up to `limit` rows, and launches them. */
  async #run(batch: Waiting<SettleOutcome, undefined>[], limit: number): Promise<void> {
    const request = limit === 0 ? null : this.#claimRequest(limit);
    let claimed: ClaimedDelivery[] = [];
    const sentAt = performance.now();
    const statement: BatchCommit<SettleOutcome, undefined> = {
      all: async (outcomes) => {
        claimed = await this.#settleAndClaim(outcomes, request);
        return outcomes.map(() => undefined);
      },
      // After a failed batch its attempts are settled row by row, so one row the database refuses
      // never blocks another: a healthy delivery left unsettled would be sent twice.
      one: (outcome) => this.#deps.deliveries.settleAndClaim([outcome], null).then(() => undefined),
      onIsolate: (error, size) =>
        this.#deps.logger.warn({ err: error, attempts: size }, 'settling a batch failed; settling its rows one by one'),
    };
    await commitBatch(batch, statement);
    leaseTaken(
      this,
      claimed.map((delivery) => delivery.id),
      sentAt,
    );
    this.#queued.push(...claimed);
    this.#launchQueued();
    // A full claim may have left more due rows behind.
    if (limit > 0 && claimed.length === limit) this.#again = true;
  }

  async #settleAndClaim(outcomes: SettleOutcome[], request: ClaimRequest | null): Promise<ClaimedDelivery[]> {
    try {
      return await this.#deps.deliveries.settleAndClaim(outcomes, request);
    } catch (error) {
      // Nothing of the statement happened; the poll claims again.
      if (outcomes.length === 0) {
        this.#deps.logger.warn(
          { err: error, rule: this.rule.name },
          'could not claim forward deliveries; the poll retries',
        );
      }
      throw error;
    }
  }

  #claimRequest(limit: number): ClaimRequest {
    return {
      rule: this.rule.name,
      limit,
      claimTimeoutMs: this.rule.claimTimeoutMs,
      ordered: this.rule.ordered,
      claim: this.#deps.claimId,
      holding: [...this.leases.keys()],
    };
  }
}
