/**
 * Answering a provider that waits with the app's reply (config: reply). Ingest has stored the
 * event, with the reply rule's outbox row already claimed as attempt 1 (NewEvent.replyDelivery);
 * this sends that attempt through forwarding's own path (sendAttempt: the same headers, re-signed
 * or with the original signature), turns the app's answer into what the provider gets (its
 * status, body and a short allowlist of headers, or the fallback), then settles the outbox row
 * and records the outcome with the event. The attempt is the rule's delivery of the event: the
 * outbox sends it again only when reply.retry says so.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import type { ReplyOutcome } from '../../generated/constants.ts';
import type { EventReply } from '../../generated/types.ts';
import { ruleTakes, type ForwardCandidate, type ForwardRuleConfig } from '../config/forward-rules.ts';
import type { ReplyConfig, ReplyFallback } from '../config/reply-config.ts';
import type { Logger } from '../log/logger.ts';
import type { DeliverResult, Outbound } from '../outbound/deliver-event.ts';
import type { EventStore, ReplyDelivery, StoredEvent } from '../store/events/event-store.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';
import type { AttemptRecord, Settlement } from '../store/outbox/delivery-claims.ts';
import { sendAttempt } from './forward-attempt.ts';

/**
 * The app's headers a provider may see besides Content-Type: what describes the body. Never
 * Set-Cookie, hop-by-hop headers or switchboard's own: the provider is not the app's browser.
 */
const PASSED_HEADERS = ['content-language', 'cache-control'] as const;

/** What the provider is answered. */
export interface ProviderAnswer {
  status: number;
  /** Absent when the app sent none. */
  contentType: string | undefined;
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

interface ReplyServiceOptions {
  store: Pick<EventStore, 'recordReply'>;
  deliveries: Pick<DeliveryRepository, 'settleMany'>;
  outbound: Pick<Outbound, 'deliver'>;
  rules: readonly ForwardRuleConfig[];
  logger: Logger;
  random?: () => number;
}

const firstValue = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** The app's answer as the provider gets it: its status and body, Content-Type and the allowed headers. */
export function appAnswer(
  status: number,
  appHeaders: Readonly<Record<string, string | string[] | undefined>>,
  body: Buffer,
): ProviderAnswer {
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = firstValue(appHeaders[name]);
    if (value !== undefined) headers[name] = value;
  }
  return { status, contentType: firstValue(appHeaders['content-type']), headers, body };
}

export function fallbackAnswer(fallback: ReplyFallback): ProviderAnswer {
  return { status: fallback.status, contentType: fallback.contentType, headers: {}, body: Buffer.from(fallback.body) };
}

/**
 * The outcome of a reply attempt, and what the provider gets: the app's answer when it came whole
 * in time, else the fallback. A connection refused is the app being away (unavailable); no answer
 * in time is timed_out; anything else that went wrong is failed.
 */
function judge(
  result: DeliverResult | undefined,
  elapsedMs: number,
  reply: ReplyConfig,
): { outcome: ReplyOutcome; answer: ProviderAnswer; status?: number } {
  const fallback = fallbackAnswer(reply.fallback);
  const late = elapsedMs >= reply.timeoutMs;
  if (result === undefined) return { outcome: 'failed', answer: fallback };
  if (!result.ok) {
    if (result.failure.reason === 'could_not_connect' && !late) return { outcome: 'unavailable', answer: fallback };
    return { outcome: late && result.failure.reason === 'no_answer' ? 'timed_out' : 'failed', answer: fallback };
  }
  const kept = result.answer;
  if (kept === undefined || !kept.complete) {
    return { outcome: late ? 'timed_out' : 'failed', answer: fallback, status: result.status };
  }
  return { outcome: 'answered', status: result.status, answer: appAnswer(result.status, kept.headers, kept.body) };
}

/** What ingest asks of the reply service (server/ wires it in). */
export type ReplyWaiter = Pick<ReplyService, 'prepare' | 'answer'>;

export class ReplyService {
  readonly #options: ReplyServiceOptions;
  readonly #rules: ReadonlyMap<string, { rule: ForwardRuleConfig; url: URL }>;
  readonly #random: () => number;
  /** Settles and records still running, so shutdown can wait for them. */
  readonly #pending = new Set<Promise<void>>();
  /** Reply attempts are never cut short by forwarding's shutdown: the provider is waiting. */
  readonly #never = new AbortController().signal;

  constructor(options: ReplyServiceOptions) {
    this.#options = options;
    this.#rules = new Map(options.rules.map((rule) => [rule.name, { rule, url: new URL(rule.to) }]));
    this.#random = options.random ?? Math.random;
  }

  /**
   * The outbox row ingest writes with the event: claimed, as attempt 1. With reply.retry the
   * claim is a lease the outbox takes over once it ends, so a crash mid-reply is retried too;
   * without, only this service settles it, or, after a crash, the next worker's start-up, which
   * makes it dead (DeliveryRepository.deadInterruptedReplies): never sent again on its own.
   */
  prepare(reply: ReplyConfig, event: ForwardCandidate): ReplyDelivery | null {
    if (reply.source.kind !== 'rule') return null;
    const rule = this.#rules.get(reply.source.rule)?.rule;
    // A rule that does not take the event (its event_types, a failed check) has no delivery of it
    // to make: the provider is answered at once, as without reply.
    if (rule === undefined || !ruleTakes(rule, event)) return null;
    // Past the wait by a wide margin: the lease must not end while the attempt is still running.
    const leaseMs = Math.max(rule.claimTimeoutMs, 2 * reply.timeoutMs);
    return { id: uuidv7(), rule: rule.name, claim: randomUUID(), leaseMs: reply.retry ? leaseMs : null };
  }

  /**
   * Sends the event just stored (as its insert answered it: no read back) to the reply rule's
   * target and answers what the provider gets: the app's answer, or the fallback. Never rejects. The outbox row is settled and the outcome
   * recorded after, without holding the provider's answer back.
   */
  async answer(event: StoredEvent, reply: ReplyConfig, delivery: ReplyDelivery): Promise<ProviderAnswer> {
    const target = this.#rules.get(delivery.rule);
    const started = performance.now();
    const eventId = event.id;
    if (target === undefined) return fallbackAnswer(reply.fallback);
    const finished = await sendAttempt({
      rule: target.rule,
      url: target.url,
      delivery: { ...delivery, eventId, attempt: 1, budgetStart: 0, event },
      outbound: this.#options.outbound,
      logger: this.#options.logger,
      signal: this.#never,
      random: this.#random,
      reply: { timeoutMs: reply.timeoutMs, keepAnswerBytes: reply.maxAnswerBytes },
    });
    const elapsedMs = Math.round((performance.now() - started) * 100) / 100;
    const judged = judge(finished.result, elapsedMs, reply);
    // Without reply.retry the reply attempt is the rule's one send of the event: a failed one is
    // dead (an operator may still retry it), never sent again on its own.
    const settlement: Settlement =
      reply.retry || finished.settlement.state !== 'failed' ? finished.settlement : { state: 'dead' };
    const recorded: EventReply = {
      outcome: judged.outcome,
      ...(judged.status === undefined ? {} : { response_status: judged.status }),
      response_ms: elapsedMs,
    };
    this.#track(this.#settle(eventId, delivery, finished.record, settlement, recorded));
    return judged.answer;
  }

  /** Waits for the settles and records still running (shutdown, and tests that read them back). */
  async drain(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  async #settle(
    eventId: string,
    delivery: ReplyDelivery,
    record: AttemptRecord,
    settlement: Settlement,
    reply: EventReply,
  ): Promise<void> {
    const { deliveries, store, logger } = this.#options;
    const done = await Promise.allSettled([
      deliveries.settleMany([
        {
          delivery: { id: delivery.id, rule: delivery.rule, claim: delivery.claim, attempt: 1 },
          attempt: record,
          settlement,
        },
      ]),
      store.recordReply(eventId, reply),
    ]);
    for (const each of done) {
      if (each.status === 'rejected') logger.warn({ err: each.reason, eventId }, 'reply: could not record the answer');
    }
  }

  #track(work: Promise<void>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }
}
