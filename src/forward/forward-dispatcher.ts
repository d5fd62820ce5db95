/**
 * The dispatcher: sends each rule's queued deliveries to its consumer. The live bus wakes it when
 * events commit; a slow poll catches what the bus missed (another instance's retries, a lost
 * notification). Each rule keeps at most `concurrency` attempts in flight (one when ordered), and
 * claims only as many rows as it can send, so a consumer down for hours costs rows in the
 * database, not memory.
 *
 * Each rule talks to the database in cycles: one statement settles the attempts that finished
 * since the last one and claims the next due rows (docs/adr/forward-cost-per-delivery.md). Under
 * load a cycle waits until half the rule's slots are free (for at most SETTLE_HOLD_MS), so each
 * statement carries several deliveries; a rule with nothing in flight claims at once.
 */
import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { failedItsCheck, type ForwardRuleConfig } from '../config/forward-rules.ts';
import type { DeliverResult, Outbound } from '../outbound/deliver-event.ts';
import type { DeliveryFailure } from '../outbound/delivery-failure.ts';
import { displayTarget } from '../outbound/send-request.ts';
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveryRepository,
  SettleOutcome,
  Settlement,
} from '../store/delivery-repository.ts';
import { nextAttemptDelayMs } from './backoff.ts';

export const DELIVERY_HEADER = 'x-switchboard-delivery';
export const ATTEMPT_HEADER = 'x-switchboard-attempt';

/** Fallback poll: due retries and rows the bus did not announce are found at least this often. */
const POLL_INTERVAL_MS = 1_000;
/**
 * Longest a finished attempt waits to be settled while its rule's other attempts are still in
 * flight, so that one statement settles several. Far below any claim_timeout_ms.
 */
const SETTLE_HOLD_MS = 20;

export type AttemptOutcome = 'delivered' | 'failed' | 'dead';

/** A finished attempt waiting to be settled, and how its waiter learns the settle committed. */
interface QueuedSettle {
  outcome: SettleOutcome;
  done: (error?: Error) => void;
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

export interface ForwardDispatcherDeps {
  rules: readonly ForwardRuleConfig[];
  /** Each rule's `to`, parsed and checked at start-up (checkForwardTargets). */
  targets: ReadonlyMap<string, URL>;
  deliveries: Pick<DeliveryRepository, 'settleAndClaim' | 'dueNow'>;
  outbound: Pick<Outbound, 'deliver'>;
  /** The live bus: called with a listener, returns the unsubscribe. */
  subscribe: (listener: () => void) => () => void;
  logger: Logger;
  /** Seam for metrics: every finished attempt. */
  onAttempt?: (rule: string, outcome: AttemptOutcome, seconds: number) => void;
  pollIntervalMs?: number;
  random?: () => number;
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

/** An attempt's error as the delivery history shows it: a failure as it is, a refusal said to be one. */
const attemptError = (failure: DeliveryFailure): string =>
  failure.code === 'refused' ? `target refused: ${failure.detail}` : failure.detail;

const NO_ANSWER = { status: null, excerpt: null, contentType: null } as const;

/** The attempt's row, from what the sending path answered: any 2xx delivered it, nothing else did. */
function attemptRecord(result: DeliverResult, startedAt: Date, elapsedMs: number, interrupted: boolean): AttemptRecord {
  if (!result.ok) {
    const error = interrupted ? 'interrupted by shutdown' : attemptError(result.failure);
    return { ...NO_ANSWER, startedAt, ms: elapsedMs, error };
  }
  const ok = result.status >= 200 && result.status <= 299;
  return {
    startedAt,
    status: result.status,
    ms: result.ms,
    error: ok ? null : `consumer answered ${result.status}`,
    excerpt: result.excerpt ?? null,
    contentType: result.contentType ?? null,
  };
}

// Over 80 lines: one closure over the state its claim loop, wake-ups, pause and stop all share
// (timers, claims in flight, the stop signal); sending is outbound's and the rows are the
// repository's.
export function startForwardDispatcher(deps: ForwardDispatcherDeps): ForwardDispatcher {
  const random = deps.random ?? Math.random;
  const pollMs = deps.pollIntervalMs ?? POLL_INTERVAL_MS;
  // One claim id per process run: rows this instance holds are recognisable, and a claim that
  // expired (another instance took over) no longer matches.
  const claimId = randomUUID();
  const cancel = new AbortController();
  // Every attempt in flight listens on this one signal (and stops listening when it ends), so the
  // listeners number the rules' concurrency summed, not Node's default leak threshold of ten.
  setMaxListeners(
    deps.rules.reduce((sum, rule) => sum + (rule.ordered ? 1 : rule.concurrency), 1),
    cancel.signal,
  );
  let stopping = false;
  const inFlight = new Set<Promise<void>>();

  interface Worker {
    rule: ForwardRuleConfig;
    url: URL;
    /** Attempts sending now; a finished one frees its slot as it joins `finished`. */
    running: number;
    /** Finished attempts waiting for the next cycle to settle them. */
    finished: QueuedSettle[];
    /** A cycle's statement is running. */
    cycling: boolean;
    again: boolean;
    holdTimer: NodeJS.Timeout | undefined;
    retryTimer: NodeJS.Timeout | undefined;
    retryAt: number;
    /** Deliveries of this rule may be waiting out a backoff (true at start: an earlier run's may). */
    backedOff: boolean;
  }

  const workers = new Map<string, Worker>();
  for (const rule of deps.rules) {
    const url = deps.targets.get(rule.name);
    if (url === undefined) throw new Error(`forward rule ${rule.name} has no checked target`);
    workers.set(rule.name, {
      rule,
      url,
      running: 0,
      finished: [],
      cycling: false,
      again: false,
      holdTimer: undefined,
      retryTimer: undefined,
      retryAt: Infinity,
      backedOff: true,
    });
  }

  /** A finished attempt's outcome, settled by the rule's next cycle; resolves once it committed. */
  function settle(worker: Worker, outcome: SettleOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      worker.finished.push({ outcome, done: (error) => (error === undefined ? resolve() : reject(error)) });
      cycle(worker);
    });
  }

  /** A timer for this instance's own scheduled retry, so it need not wait for the poll. */
  function wakeAt(worker: Worker, delayMs: number): void {
    const at = Date.now() + delayMs;
    if (worker.retryTimer !== undefined && worker.retryAt <= at) return;
    clearTimeout(worker.retryTimer);
    worker.retryAt = at;
    worker.retryTimer = setTimeout(() => {
      worker.retryTimer = undefined;
      worker.retryAt = Infinity;
      cycle(worker);
    }, delayMs + 5);
    worker.retryTimer.unref();
  }

  /** One attempt and its settle; its slot is given back once, when the consumer answered at the latest. */
  async function attempt(worker: Worker, delivery: ClaimedDelivery): Promise<void> {
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      worker.running -= 1;
    };
    try {
      await attemptAndSettle(worker, delivery, release);
    } finally {
      release();
    }
  }

  async function attemptAndSettle(worker: Worker, delivery: ClaimedDelivery, release: () => void): Promise<void> {
    const { rule } = worker;
    const startedAt = new Date();
    const started = performance.now();
    let record: AttemptRecord;
    let settlement: Settlement;
    const failedSoFar = delivery.attempt - delivery.budgetStart;
    const failure = (status: number | null, retryAfter: string | undefined): Settlement =>
      failedSoFar >= rule.maxAttempts
        ? { state: 'dead' }
        : {
            state: 'failed',
            retryInMs: nextAttemptDelayMs(rule.backoff, failedSoFar, { status, retryAfter }, random, Date.now()),
          };
    const { event } = delivery;
    const elapsedMs = (): number => Math.round((performance.now() - started) * 100) / 100;
    try {
      const result = await deps.outbound.deliver({
        event,
        url: worker.url,
        timeoutMs: rule.timeoutMs,
        // include_unverified sends a failed event as it came, never re-signed; resign: false sends none.
        unsigned: !rule.resign || failedItsCheck(event),
        extraHeaders: { [DELIVERY_HEADER]: delivery.id, [ATTEMPT_HEADER]: String(delivery.attempt) },
        signal: cancel.signal,
        // One kept-alive pinned connection pool per rule (see docs/adr on connection reuse).
        keepAliveKey: `forward:${rule.name}`,
      });
      record = attemptRecord(result, startedAt, elapsedMs(), cancel.signal.aborted);
      if (!result.ok) settlement = failure(null, undefined);
      else if (record.error === null) settlement = { state: 'delivered' };
      else settlement = failure(result.status, result.retryAfter);
    } catch (error) {
      // Not a refusal or a transport failure (those come back as results): a bug, logged whole.
      deps.logger.error(
        { err: error, deliveryId: delivery.id, rule: rule.name },
        'forward attempt failed unexpectedly',
      );
      record = { ...NO_ANSWER, startedAt, ms: elapsedMs(), error: 'internal error (see the server log)' };
      settlement = failure(null, undefined);
    }
    // Cut short by shutdown: due again at once, for whichever instance runs next.
    if (cancel.signal.aborted && record.status === null) settlement = { state: 'failed', retryInMs: 0 };
    const seconds = (performance.now() - started) / 1000;
    // The slot is free once the consumer answered; the settle goes with the rule's next claim.
    release();
    await settle(worker, { delivery, attempt: record, settlement });
    deps.onAttempt?.(rule.name, settlement.state, seconds);
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
      worker.backedOff = true;
      if (!stopping) wakeAt(worker, settlement.retryInMs);
    } else if (settlement.state === 'delivered' && worker.backedOff && !stopping) {
      worker.backedOff = false;
      await recovered(worker);
    } else if (settlement.state === 'dead') {
      deps.logger.warn(
        { rule: rule.name, deliveryId: delivery.id, attempts: delivery.attempt, error: record.error },
        'forward delivery is dead after max_attempts',
      );
    }
  }

  /**
   * The consumer answered again: whatever waits out a backoff is due now, so the backlog drains at
   * the rule's concurrency (in order, when ordered) within a claim of the first success instead
   * of each delivery waiting out its own, by then long, backoff.
   */
  async function recovered(worker: Worker): Promise<void> {
    try {
      const due = await deps.deliveries.dueNow(worker.rule.name);
      if (due > 0) deps.logger.info({ rule: worker.rule.name, due }, 'forward target answered again; retrying now');
    } catch (error) {
      // The next success tries again; meanwhile the backoffs run as they would have.
      worker.backedOff = true;
      deps.logger.warn({ err: error, rule: worker.rule.name }, 'could not make waiting forward deliveries due');
    }
  }

  function launch(worker: Worker, delivery: ClaimedDelivery): void {
    worker.running += 1;
    const run = attempt(worker, delivery)
      .catch((error: unknown) => {
        // Settling failed (database down): the claim expires and the delivery is claimed again.
        deps.logger.warn(
          { err: error, deliveryId: delivery.id, rule: worker.rule.name },
          'could not record a forward attempt',
        );
      })
      .finally(() => {
        inFlight.delete(run);
        cycle(worker);
      });
    inFlight.add(run);
  }

  /**
   * After a cycle's statement failed: its attempts are settled row by row, so one row the
   * database refuses (or a row whose delivery went away) never blocks another. A healthy
   * delivery left unsettled would be claimed again at its claim timeout and sent twice.
   */
  async function settleOneByOne(batch: readonly QueuedSettle[], error: unknown): Promise<void> {
    if (batch.length === 0) return;
    if (batch.length === 1) {
      batch[0]?.done(asError(error));
      return;
    }
    deps.logger.warn({ err: error, attempts: batch.length }, 'settling a batch failed; settling its rows one by one');
    for (const item of batch) {
      try {
        await deps.deliveries.settleAndClaim([item.outcome], null);
        item.done();
      } catch (rowError) {
        item.done(asError(rowError));
      }
    }
  }

  const roomOf = (worker: Worker): number =>
    worker.rule.ordered ? (worker.running === 0 ? 1 : 0) : worker.rule.concurrency - worker.running;

  /**
   * One round trip for the rule: settle what finished, claim what there is room for. With attempts
   * still in flight, it claims only once half the slots are free, and settles early (without
   * claiming) only after SETTLE_HOLD_MS, so under load each statement carries several deliveries.
   */
  function cycle(worker: Worker, force = false): void {
    if (worker.cycling) {
      worker.again = true;
      return;
    }
    const room = stopping ? 0 : roomOf(worker);
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
    const batch = worker.finished.splice(0);
    const limit = claimable ? room : 0;
    worker.cycling = true;
    const request =
      limit === 0
        ? null
        : {
            rule: worker.rule.name,
            limit,
            claimTimeoutMs: worker.rule.claimTimeoutMs,
            ordered: worker.rule.ordered,
            claim: claimId,
          };
    const cycling: Promise<void> = deps.deliveries
      .settleAndClaim(
        batch.map((item) => item.outcome),
        request,
      )
      .then(
        (claimed) => {
          for (const item of batch) item.done();
          for (const delivery of claimed) launch(worker, delivery);
          // A full claim may have left more due rows behind.
          if (limit > 0 && claimed.length === limit) worker.again = true;
        },
        (error: unknown) => {
          // Nothing of the statement happened; the poll claims again.
          if (batch.length === 0) {
            deps.logger.warn(
              { err: error, rule: worker.rule.name },
              'could not claim forward deliveries; the poll retries',
            );
          }
          return settleOneByOne(batch, error);
        },
      )
      .finally(() => {
        worker.cycling = false;
        inFlight.delete(cycling);
        if (worker.again || worker.finished.length > 0) {
          worker.again = false;
          cycle(worker);
        }
      });
    // Tracked like an attempt: what it claims during a shutdown is launched, then released.
    inFlight.add(cycling);
  }

  /** Waits until nothing is in flight, including attempts launched while waiting. */
  async function settleAll(): Promise<void> {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  }

  const pumpAll = (): void => {
    for (const worker of workers.values()) cycle(worker);
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
      if (worker) cycle(worker);
    },
    async stop(drainMs) {
      stopping = true;
      unsubscribe();
      clearInterval(poll);
      for (const worker of workers.values()) clearTimeout(worker.retryTimer);
      // Held settles go now: from here on every cycle settles at once.
      for (const worker of workers.values()) cycle(worker, true);
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
    },
  };
}
