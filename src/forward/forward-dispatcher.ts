/**
 * The dispatcher: sends each rule's queued deliveries to its consumer. The live bus wakes it when
 * events commit; a slow poll catches what the bus missed (another instance's retries, a lost
 * notification). Each rule keeps at most `concurrency` attempts in flight (one when ordered), and
 * claims only as many rows as it can send, so a consumer down for hours costs rows in the
 * database, not memory.
 */
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

export type AttemptOutcome = 'delivered' | 'failed' | 'dead';

export interface ForwardDispatcherDeps {
  rules: readonly ForwardRuleConfig[];
  /** Each rule's `to`, parsed and checked at start-up (checkForwardTargets). */
  targets: ReadonlyMap<string, URL>;
  deliveries: Pick<DeliveryRepository, 'claim' | 'settleMany' | 'dueNow'>;
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
  let stopping = false;
  const inFlight = new Set<Promise<void>>();

  interface Worker {
    rule: ForwardRuleConfig;
    url: URL;
    running: number;
    claiming: boolean;
    again: boolean;
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
      claiming: false,
      again: false,
      retryTimer: undefined,
      retryAt: Infinity,
      backedOff: true,
    });
  }

  /**
   * Finished attempts are settled together: the first settles at once, and those that finish
   * while its statement runs wait for it and then go in one statement. No attempt waits longer
   * than one settle statement, and at load a batch costs one round trip instead of one each.
   */
  type QueuedSettle = { outcome: SettleOutcome; done: (error?: Error) => void };
  const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
  let settleQueue: QueuedSettle[] = [];
  let settling = false;
  function flushSettles(): void {
    if (settling || settleQueue.length === 0) return;
    settling = true;
    const batch = settleQueue;
    settleQueue = [];
    void settleBatch(batch).finally(() => {
      settling = false;
      flushSettles();
    });
  }

  /**
   * One statement for the batch; if it fails, row by row, so one row the database refuses (or a
   * row whose delivery went away) never blocks another: a healthy delivery left unsettled would be
   * claimed again at its claim timeout and sent twice.
   */
  async function settleBatch(batch: readonly QueuedSettle[]): Promise<void> {
    try {
      await deps.deliveries.settleMany(batch.map((item) => item.outcome));
      for (const item of batch) item.done();
      return;
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.done(asError(error));
        return;
      }
      deps.logger.warn({ err: error, attempts: batch.length }, 'settling a batch failed; settling its rows one by one');
    }
    for (const item of batch) {
      try {
        await deps.deliveries.settleMany([item.outcome]);
        item.done();
      } catch (error) {
        item.done(asError(error));
      }
    }
  }

  function settle(outcome: SettleOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      settleQueue.push({ outcome, done: (error) => (error === undefined ? resolve() : reject(error)) });
      flushSettles();
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
      pump(worker);
    }, delayMs + 5);
    worker.retryTimer.unref();
  }

  async function attempt(worker: Worker, delivery: ClaimedDelivery): Promise<void> {
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
    await settle({ delivery, attempt: record, settlement });
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
        worker.running -= 1;
        inFlight.delete(run);
        pump(worker);
      });
    inFlight.add(run);
  }

  function pump(worker: Worker): void {
    if (stopping) return;
    if (worker.claiming) {
      worker.again = true;
      return;
    }
    const room = worker.rule.ordered ? (worker.running === 0 ? 1 : 0) : worker.rule.concurrency - worker.running;
    if (room <= 0) return;
    worker.claiming = true;
    const claiming: Promise<void> = deps.deliveries
      .claim({
        rule: worker.rule.name,
        limit: room,
        claimTimeoutMs: worker.rule.claimTimeoutMs,
        ordered: worker.rule.ordered,
        claim: claimId,
      })
      .then((claimed) => {
        for (const delivery of claimed) launch(worker, delivery);
        // A full claim may have left more due rows behind.
        if (claimed.length === room) worker.again = true;
      })
      .catch((error: unknown) => {
        deps.logger.warn(
          { err: error, rule: worker.rule.name },
          'could not claim forward deliveries; the poll retries',
        );
      })
      .finally(() => {
        worker.claiming = false;
        inFlight.delete(claiming);
        if (worker.again) {
          worker.again = false;
          pump(worker);
        }
      });
    // Tracked like an attempt: what it claims during a shutdown is launched, then released.
    inFlight.add(claiming);
  }

  /** Waits until nothing is in flight, including attempts launched while waiting. */
  async function settleAll(): Promise<void> {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  }

  const pumpAll = (): void => {
    for (const worker of workers.values()) pump(worker);
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
      if (worker) pump(worker);
    },
    async stop(drainMs) {
      stopping = true;
      unsubscribe();
      clearInterval(poll);
      for (const worker of workers.values()) clearTimeout(worker.retryTimer);
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
