/**
 * Sending one claimed delivery: the request through the one outbound path, and what its answer
 * makes of the delivery (delivered, failed with the wait before the next attempt, or dead).
 * Claiming and settling are rule-worker.ts's; this module talks to the consumer only.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log/logger.ts';
import { failedItsCheck, type ForwardRuleConfig } from '../config/forward-rules.ts';
import type { DeliverResult, Outbound } from '../outbound/deliver-event.ts';
import type { DeliveryFailure } from '../outbound/delivery-failure.ts';
import type { AttemptRecord, ClaimedDelivery, Settlement } from '../store/outbox/delivery-claims.ts';
import { nextAttemptDelayMs } from './backoff.ts';

const DELIVERY_HEADER = 'x-switchboard-delivery';
const ATTEMPT_HEADER = 'x-switchboard-attempt';

export type AttemptOutcome = 'delivered' | 'failed' | 'dead';

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

export interface AttemptInput {
  rule: ForwardRuleConfig;
  /** The rule's `to`, parsed and checked at start-up. */
  url: URL;
  delivery: ClaimedDelivery;
  outbound: Pick<Outbound, 'deliver'>;
  logger: Logger;
  /** The dispatcher's shutdown: an attempt it cuts short is due again at once. */
  signal: AbortSignal;
  random: () => number;
  /**
   * A reply attempt (reply-service.ts): its own wait instead of the rule's timeout_ms, and the
   * whole answer kept, up to keepAnswerBytes, to be passed back to the provider.
   */
  reply?: { timeoutMs: number; keepAnswerBytes: number };
}

export interface FinishedAttempt {
  record: AttemptRecord;
  settlement: Settlement;
  /** From the start of the attempt to its answer (or failure), for the metrics. */
  seconds: number;
  /** What the sending path answered; absent when the attempt failed unexpectedly. */
  result?: DeliverResult;
}

/** Sends the delivery once and says what becomes of it; never rejects (a bug is logged and counts as a failure). */
export async function sendAttempt(input: AttemptInput): Promise<FinishedAttempt> {
  const { rule, delivery, signal } = input;
  const startedAt = new Date();
  const started = performance.now();
  const failedSoFar = delivery.attempt - delivery.budgetStart;
  const failure = (status: number | null, retryAfter: string | undefined): Settlement =>
    failedSoFar >= rule.maxAttempts
      ? { state: 'dead' }
      : {
          state: 'failed',
          retryInMs: nextAttemptDelayMs(rule.backoff, failedSoFar, { status, retryAfter }, input.random, Date.now()),
        };
  const { event } = delivery;
  const elapsedMs = (): number => Math.round((performance.now() - started) * 100) / 100;
  let record: AttemptRecord;
  let settlement: Settlement;
  let result: DeliverResult | undefined;
  try {
    result = await input.outbound.deliver({
      event,
      url: input.url,
      timeoutMs: input.reply?.timeoutMs ?? rule.timeoutMs,
      // include_unverified sends a failed event as it came, never re-signed; resign: false sends none.
      unsigned: !rule.resign || failedItsCheck(event),
      extraHeaders: { [DELIVERY_HEADER]: delivery.id, [ATTEMPT_HEADER]: String(delivery.attempt) },
      signal,
      // One kept-alive pinned connection pool per rule (see docs/adr on connection reuse).
      keepAliveKey: `forward:${rule.name}`,
      ...(input.reply === undefined ? {} : { keepAnswerBytes: input.reply.keepAnswerBytes }),
    });
    record = attemptRecord(result, startedAt, elapsedMs(), signal.aborted);
    if (!result.ok) settlement = failure(null, undefined);
    else if (record.error === null) settlement = { state: 'delivered' };
    else settlement = failure(result.status, result.retryAfter);
  } catch (error) {
    // Not a refusal or a transport failure (those come back as results): a bug, logged whole.
    input.logger.error({ err: error, deliveryId: delivery.id, rule: rule.name }, 'forward attempt failed unexpectedly');
    record = { ...NO_ANSWER, startedAt, ms: elapsedMs(), error: 'internal error (see the server log)' };
    settlement = failure(null, undefined);
  }
  // Cut short by shutdown: due again at once, for whichever instance runs next.
  if (signal.aborted && record.status === null) settlement = { state: 'failed', retryInMs: 0 };
  return {
    record,
    settlement,
    seconds: (performance.now() - started) / 1000,
    ...(result === undefined ? {} : { result }),
  };
}
