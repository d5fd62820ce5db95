/**
 * Answers from `switchboard listen --reply` (config: reply: {from: listen}). Ingest has stored the
 * event; this holds the provider's request while the event is offered down every open reply
 * stream that follows its provider (GET /api/stream?reply=…), and takes the first answer that
 * comes back through POST /api/replies/{id}. The answer is accepted once, from a token that was
 * offered it: a later one (another listener's, or one after the wait ended) is refused with
 * `conflict`, logged and counted as late. With no reply stream open the provider gets the
 * fallback at once (unavailable); with no answer in time, the fallback in time (timed_out).
 *
 * The pending requests live in this process: a listener's stream and its answer must reach the
 * instance that holds the provider's request (docs/forwarding.md says how to run several).
 */
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import type { ReplyOutcome } from '../../generated/constants.ts';
import type {
  ApiEventSummary,
  ApiReplyAnswer,
  ApiReplyAnswerResult,
  ApiReplyRequest,
  EventReply,
} from '../../generated/types.ts';
import type { ReplyConfig } from '../config/reply-config.ts';
import { AppError, invalidArgument, notFound } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { appAnswer, fallbackAnswer, type ProviderAnswer } from './reply-service.ts';

/** One open reply stream: whose it is, which providers it answers for, and how to offer it a delivery. */
export interface ReplyStream {
  /** The stream's token (Caller.id): only a token that was offered a delivery may answer it. */
  callerId: string;
  /** The providers it answers for; undefined: every provider. */
  providers: ReadonlySet<string> | undefined;
  offer(request: ApiReplyRequest): void;
}

interface ListenRepliesOptions {
  store: Pick<EventStore, 'summaries' | 'recordReply'>;
  logger: Logger;
  /** Told of each late answer (a counter). */
  onLate?: (provider: string) => void;
}

interface Pending {
  eventId: string;
  provider: string;
  reply: ReplyConfig;
  offeredTo: ReadonlySet<string>;
  started: number;
  timer: NodeJS.Timeout;
  resolve: (answer: ProviderAnswer) => void;
}

/** Ended waits remembered, so a late answer is told apart from a wrong id; past this the oldest go. */
const MAX_ENDED = 10_000;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What a listener's failure means for the recorded outcome. */
const FAILURE_OUTCOME: Record<Extract<ApiReplyAnswer, { failure: string }>['failure'], ReplyOutcome> = {
  could_not_connect: 'unavailable',
  no_answer: 'timed_out',
  too_large: 'failed',
  failed: 'failed',
};

const elapsedSince = (started: number): number => Math.round((performance.now() - started) * 100) / 100;

export class ListenReplies {
  readonly #options: ListenRepliesOptions;
  readonly #streams = new Set<ReplyStream>();
  readonly #pending = new Map<string, Pending>();
  /** Reply id → who was offered it, for the waits that ended (answered or not). */
  readonly #ended = new Map<string, { provider: string; offeredTo: ReadonlySet<string> }>();
  /** Records still running, so shutdown can wait for them. */
  readonly #records = new Set<Promise<void>>();

  constructor(options: ListenRepliesOptions) {
    this.#options = options;
  }

  /** Offers this stream every delivery of its providers that waits, from now on; returns the detach. */
  attach(stream: ReplyStream): () => void {
    this.#streams.add(stream);
    return () => {
      this.#streams.delete(stream);
    };
  }

  /**
   * What the provider gets for a stored delivery that waits: the first listener's answer, or the
   * fallback (no reply stream open, no answer in time, an answer it cannot use). Never rejects.
   */
  async answer(eventId: string, provider: string, reply: ReplyConfig): Promise<ProviderAnswer> {
    const started = performance.now();
    if (this.#streamsFor(provider).length === 0) return this.#unanswered(eventId, reply, 'unavailable', started);
    let summary: ApiEventSummary | undefined;
    try {
      [summary] = await this.#options.store.summaries([eventId]);
    } catch (err: unknown) {
      this.#options.logger.warn({ err, eventId }, 'reply: could not read the stored event');
    }
    const streams = this.#streamsFor(provider);
    if (summary === undefined) return this.#unanswered(eventId, reply, 'failed', started);
    if (streams.length === 0) return this.#unanswered(eventId, reply, 'unavailable', started);
    const id = uuidv7();
    const request: ApiReplyRequest = {
      reply_id: id,
      event: summary,
      timeout_ms: Math.max(1, Math.floor(reply.timeoutMs - (performance.now() - started))),
      max_answer_bytes: reply.maxAnswerBytes,
    };
    return new Promise<ProviderAnswer>((resolve) => {
      const timer = setTimeout(() => this.#settle(id, 'timed_out', fallbackAnswer(reply.fallback)), request.timeout_ms);
      const offeredTo = new Set(streams.map((s) => s.callerId));
      this.#pending.set(id, { eventId, provider, reply, offeredTo, started, timer, resolve });
      for (const stream of streams) stream.offer(request);
    });
  }

  /**
   * A listener's answer to a pending delivery: taken once, from a token that was offered it.
   * Throws not_found (an id this instance never offered), forbidden (another token's), conflict
   * (answered already, or its wait ended: late) and invalid_argument (a body that is not base64).
   */
  submit(replyId: string, callerId: string, body: ApiReplyAnswer): ApiReplyAnswerResult {
    const pending = this.#pending.get(replyId);
    if (pending === undefined) {
      const ended = this.#ended.get(replyId);
      if (ended === undefined || !ended.offeredTo.has(callerId)) throw notFound(`no pending reply with id ${replyId}`);
      this.#options.onLate?.(ended.provider);
      this.#options.logger.info({ replyId, provider: ended.provider }, 'reply: a late answer from listen, refused');
      throw new AppError('conflict', `reply ${replyId} was answered already or its wait ended; this answer is late`);
    }
    if (!pending.offeredTo.has(callerId))
      throw new AppError('forbidden', `reply ${replyId} was not offered to this token's reply stream`);
    const { outcome, answer, status } = this.#judge(pending.reply, body);
    this.#settle(replyId, outcome, answer, status);
    return { reply_id: replyId, event_id: pending.eventId, outcome };
  }

  /** Waits for the records still running (shutdown, and tests that read them back). */
  async drain(): Promise<void> {
    while (this.#records.size > 0) await Promise.all([...this.#records]);
  }

  #judge(reply: ReplyConfig, body: ApiReplyAnswer): { outcome: ReplyOutcome; answer: ProviderAnswer; status?: number } {
    const fallback = fallbackAnswer(reply.fallback);
    if ('failure' in body) return { outcome: FAILURE_OUTCOME[body.failure], answer: fallback };
    if (!BASE64.test(body.body_base64)) throw invalidArgument('body_base64: not base64');
    const bytes = Buffer.from(body.body_base64, 'base64');
    // Over the cap the app's answer is not passed on, as for a forward rule's: the fallback goes.
    if (bytes.length > reply.maxAnswerBytes) return { outcome: 'failed', answer: fallback, status: body.status };
    return { outcome: 'answered', answer: appAnswer(body.status, body.headers, bytes), status: body.status };
  }

  #streamsFor(provider: string): ReplyStream[] {
    return [...this.#streams].filter((s) => s.providers === undefined || s.providers.has(provider));
  }

  #unanswered(eventId: string, reply: ReplyConfig, outcome: ReplyOutcome, started: number): ProviderAnswer {
    this.#record(eventId, { outcome, response_ms: elapsedSince(started) });
    return fallbackAnswer(reply.fallback);
  }

  #settle(id: string, outcome: ReplyOutcome, answer: ProviderAnswer, status?: number): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    this.#ended.set(id, { provider: pending.provider, offeredTo: pending.offeredTo });
    if (this.#ended.size > MAX_ENDED) {
      const oldest = this.#ended.keys().next();
      if (oldest.done !== true) this.#ended.delete(oldest.value);
    }
    pending.resolve(answer);
    this.#record(pending.eventId, {
      outcome,
      ...(status === undefined ? {} : { response_status: status }),
      response_ms: elapsedSince(pending.started),
    });
  }

  #record(eventId: string, reply: EventReply): void {
    const work = this.#options.store
      .recordReply(eventId, reply)
      .catch((err: unknown) => this.#options.logger.warn({ err, eventId }, 'reply: could not record the answer'));
    this.#records.add(work);
    void work.finally(() => this.#records.delete(work));
  }
}
