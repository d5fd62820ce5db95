import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { RESPONSE_CONTENT_TYPE_LIMITS } from '../../generated/constants.ts';
import { DeliveryFailure, failed, type DeliveryFailureReason } from './delivery-failure.ts';
import type { OutgoingHeaders } from './outgoing-headers.ts';

/** How much of a consumer's answer is read before the stream is dropped: enough to let it finish writing. */
const DEFAULT_RESPONSE_BODY_LIMIT_BYTES = 64 * 1024;

export interface SendRequestInput {
  /** Where the request goes: the checked target's origin, and its path with the query. */
  target: { origin: string; path: string };
  /** The pinned, policy-checked dispatcher; the caller closes it. */
  dispatcher: Dispatcher;
  body: Buffer;
  headers: OutgoingHeaders;
  timeoutMs: number;
  responseBodyLimitBytes?: number;
  /**
   * Keep the whole answer, up to this many bytes, with its headers (SendOutcome.answer), for a
   * provider waiting for the app's reply; one byte more is read, which tells a longer answer.
   */
  keepAnswerBytes?: number;
  /** Ends the request early (shutdown); reported like a timeout. */
  signal?: AbortSignal;
}

/** The whole answer, as kept for a reply (SendRequestInput.keepAnswerBytes). */
interface KeptAnswer {
  body: Buffer;
  /** False when the answer was longer than the bytes kept, or ended early (a reset, the deadline). */
  complete: boolean;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** How much of a consumer's answer is kept to show why it failed: enough for an error message or a stack's top. */
const RESPONSE_EXCERPT_BYTES = 2048;

export interface SendOutcome {
  status: number;
  /** From the start of the request to the response's status line. */
  ms: number;
  /** The first RESPONSE_EXCERPT_BYTES of the answer as storable text (responseExcerpt), with "…" when cut; absent when empty. */
  excerpt: string | undefined;
  /** The answer's Content-Type header, when it sent one. */
  contentType: string | undefined;
  /** The answer's Retry-After header as sent (forwarding honours it on 429 and 503). */
  retryAfter: string | undefined;
  /** With keepAnswerBytes only: the answer itself. */
  answer?: KeptAnswer;
}

function withoutQuery(url: string, queryMarker: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}${parsed.search === '' ? '' : queryMarker}`;
  } catch {
    return '(unparseable target)';
  }
}

/** The URL as errors and logs show it: a query string may carry a consumer's token. */
export const displayTarget = (url: string): string => withoutQuery(url, '');

/**
 * The URL as the audit trail stores it and the history shows it: any token holder can read the
 * history back, so the query becomes `?…`, which still says that one was sent.
 */
export const recordedTarget = (url: string): string => withoutQuery(url, '?…');

function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current !== undefined && current !== null && chain.length < 5 && !chain.includes(current)) {
    chain.push(current);
    current = current instanceof Error ? current.cause : undefined;
  }
  return chain;
}

const stringProp = (value: unknown, key: 'code' | 'name'): string | undefined => {
  if (typeof value !== 'object' || value === null || !(key in value)) return undefined;
  const prop: unknown = (value as Record<string, unknown>)[key];
  return typeof prop === 'string' ? prop : undefined;
};

/**
 * Each transport code: what it means, and the failure's reason (connected, or never got that far).
 *
 * Shape repeat by intent: a table of words, alike in shape to other tables (no logic to share).
 */
const REASONS: Readonly<Record<string, readonly [text: string, reason: DeliveryFailureReason]>> = {
  ECONNREFUSED: ['connection refused', 'could_not_connect'],
  ECONNRESET: ['connection reset before an answer', 'no_answer'],
  EPIPE: ['connection closed while sending', 'no_answer'],
  UND_ERR_SOCKET: ['connection closed before an answer', 'no_answer'],
  UND_ERR_CLOSED: ['connection closed before an answer', 'no_answer'],
  EHOSTUNREACH: ['host unreachable', 'could_not_connect'],
  ENETUNREACH: ['network unreachable', 'could_not_connect'],
  EADDRNOTAVAIL: ['address not available', 'could_not_connect'],
  ETIMEDOUT: ['connect timed out', 'could_not_connect'],
  UND_ERR_CONNECT_TIMEOUT: ['connect timed out', 'could_not_connect'],
  ENOTFOUND: ['name could not be resolved', 'could_not_resolve'],
  EAI_AGAIN: ['name could not be resolved', 'could_not_resolve'],
};

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_ABORTED']);

/**
 * Turns whatever undici rejected with into a DeliveryFailure. Refusals raised while connecting
 * (the policy, checked again per connection) pass through unchanged. The detail names a reason
 * code, never the request headers, so no signature or token can leak through it.
 * @internal outside src/, only tests or benches use it
 */
export function transportFailure(error: unknown, timeoutMs: number): DeliveryFailure {
  const chain = errorChain(error);
  const known = chain.find((e): e is DeliveryFailure => e instanceof DeliveryFailure);
  if (known) return known;

  const codes = chain.map((e) => stringProp(e, 'code')).filter((c): c is string => c !== undefined);
  const names = chain.map((e) => stringProp(e, 'name')).filter((n): n is string => n !== undefined);

  if (names.includes('TimeoutError') || names.includes('AbortError') || codes.some((c) => TIMEOUT_CODES.has(c))) {
    return failed('no_answer', `no answer within ${timeoutMs} ms`, error);
  }
  const code = codes.find((c) => REASONS[c] !== undefined);
  const [text, reason] = code === undefined ? [] : (REASONS[code] ?? []);
  if (code !== undefined && text !== undefined && reason !== undefined) {
    return failed(reason, `${text} (${code})`, error);
  }
  if (names.includes('HTTPParserError')) return failed('no_answer', 'the answer was not valid HTTP/1.1', error);
  const tls = codes.find(
    (c) => c.startsWith('ERR_TLS_') || c.startsWith('ERR_SSL_') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(c),
  );
  if (tls !== undefined) return failed('could_not_connect', `TLS handshake failed (${tls})`, error);
  const label = codes[0] ?? names.find((n) => n !== 'Error') ?? 'unknown error';
  return failed('could_not_connect', `transport error (${label})`, error);
}

/**
 * The answer's first bytes as text that can be stored and shown: cut at the last whole UTF-8
 * character, each byte that is not part of valid UTF-8 written as `\xNN`, and NUL (which
 * PostgreSQL text cannot hold) as `\u0000`. One such byte in a consumer's answer once failed
 * the statement that settled a whole batch of deliveries. Undefined when the answer was empty.
 * @internal outside src/, only tests or benches use it
 */
export function responseExcerpt(head: Buffer, more: boolean): string | undefined {
  if (head.length === 0) return undefined;
  let text: string;
  try {
    // stream: true holds back a character split by the cut instead of calling it invalid.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(head, { stream: more });
  } catch {
    text = escapeInvalidUtf8(head, more);
  }
  if (text.includes('\u0000')) text = text.replaceAll('\u0000', '\\u0000');
  return more ? `${text}…` : text;
}

/** The length of the well-formed UTF-8 sequence at `at` (RFC 3629), 0 when none starts there, -1 when cut off by the end. */
function utf8SequenceLength(bytes: Buffer, at: number): number {
  const lead = bytes[at] ?? 0;
  if (lead < 0x80) return 1;
  let length: number;
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f; // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return 0;
  for (let k = 1; k < length; k += 1) {
    const next = bytes[at + k];
    if (next === undefined) return -1;
    if (next < (k === 1 ? low : 0x80) || next > (k === 1 ? high : 0xbf)) return 0;
  }
  return length;
}

/** Valid runs decoded, every other byte as `\xNN`; a character cut off by the excerpt's end is dropped. */
function escapeInvalidUtf8(bytes: Buffer, more: boolean): string {
  let out = '';
  let runStart = 0;
  let at = 0;
  while (at < bytes.length) {
    const length = utf8SequenceLength(bytes, at);
    if (length > 0) {
      at += length;
      continue;
    }
    out += bytes.toString('utf8', runStart, at);
    if (length === -1 && more) return out;
    out += `\\x${(bytes[at] ?? 0).toString(16).padStart(2, '0')}`;
    at += 1;
    runStart = at;
  }
  return out + bytes.toString('utf8', runStart, at);
}

/**
 * Calls `listener` when `signal` aborts; returns the unsubscribe. Every attempt in flight shares
 * the one shutdown signal, so one listener on it serves them all: an EventTarget listener per
 * request was a measurable share of a forwarded delivery's CPU.
 */
function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let listeners = abortListeners.get(signal);
  if (listeners === undefined) {
    const set = new Set<() => void>();
    listeners = set;
    abortListeners.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        for (const each of [...set]) each();
        set.clear();
      },
      { once: true },
    );
  }
  const set = listeners;
  set.add(listener);
  return () => void set.delete(listener);
}
const abortListeners = new WeakMap<AbortSignal, Set<() => void>>();

const firstValue = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * Reads the answer straight off undici's parser: the status line and headers, then at most
 * `limit` bytes of the body, of which the first RESPONSE_EXCERPT_BYTES are kept. Reading lets a
 * consumer finish writing its response instead of seeing a reset; the bound keeps a consumer that
 * streams forever (or a huge file) from holding the delivery. A dispatch handler rather than
 * `request()`: no Readable and no async iterator per response (docs/adr/forward-cost-per-delivery.md).
 */
class OutcomeHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Set when the deadline or the shutdown came before undici handed over the controller. */
  private abortReason: Error | undefined;
  private status = 0;
  private ms = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private readonly kept: Buffer[] = [];
  private seen = 0;
  private answered = false;
  private done = false;
  /** keepAnswerBytes: every chunk of the answer while it fits, and whether it ended (not cut). */
  private readonly whole: Buffer[] | undefined;
  private ended = false;

  constructor(
    private readonly started: number,
    private readonly limit: number,
    private readonly timeoutMs: number,
    private readonly resolve: (outcome: SendOutcome) => void,
    private readonly reject: (failure: DeliveryFailure) => void,
    private readonly keepAnswerBytes?: number,
  ) {
    if (keepAnswerBytes !== undefined) this.whole = [];
  }

  abort(reason: Error): void {
    if (this.controller === undefined) this.abortReason ??= reason;
    else this.controller.abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason !== undefined) controller.abort(this.abortReason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.ms = Math.round((performance.now() - this.started) * 100) / 100;
    this.status = statusCode;
    this.headers = headers;
    this.answered = true;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.seen < RESPONSE_EXCERPT_BYTES) this.kept.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - this.seen));
    this.seen += chunk.length;
    if (this.whole !== undefined && this.seen <= (this.keepAnswerBytes ?? 0)) this.whole.push(chunk);
    if (this.seen < this.limit) return;
    // Enough read: the outcome stands, the rest of the answer is dropped with its connection.
    this.finish();
    controller.abort(new Error('response body limit reached'));
  }

  onResponseEnd(): void {
    this.ended = true;
    this.finish();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    // After the status line (aborted by the deadline, reset by the consumer): the outcome stands.
    if (this.answered) this.finish();
    else this.fail(error);
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.reject(transportFailure(error, this.timeoutMs));
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    const head = this.kept.length === 1 ? (this.kept[0] ?? Buffer.alloc(0)) : Buffer.concat(this.kept);
    this.resolve({
      status: this.status,
      ms: this.ms,
      excerpt: responseExcerpt(head, this.seen > RESPONSE_EXCERPT_BYTES),
      contentType: firstValue(this.headers['content-type'])?.slice(0, RESPONSE_CONTENT_TYPE_LIMITS.maxLength),
      retryAfter: firstValue(this.headers['retry-after']),
      ...(this.whole === undefined
        ? {}
        : {
            answer: {
              body: Buffer.concat(this.whole),
              complete: this.ended && this.seen <= (this.keepAnswerBytes ?? 0),
              headers: this.headers,
            },
          }),
    });
  }
}

/**
 * One POST of the stored bytes. Redirects are not followed (the guarded dispatcher has no
 * redirect interceptor, and a bare dispatch never follows one), so a 3xx comes back as the
 * outcome. Any HTTP answer is an outcome; only transport failures reject (a DeliveryFailure).
 */
export function sendRequest(input: SendRequestInput): Promise<SendOutcome> {
  const limit =
    input.keepAnswerBytes === undefined
      ? (input.responseBodyLimitBytes ?? DEFAULT_RESPONSE_BODY_LIMIT_BYTES)
      : input.keepAnswerBytes + 1;
  const { origin, path } = input.target;
  return new Promise<SendOutcome>((resolve, reject) => {
    let unsubscribe: (() => void) | undefined;
    const settle =
      <T>(then: (value: T) => void) =>
      (value: T): void => {
        clearTimeout(timer);
        unsubscribe?.();
        then(value);
      };
    const handler = new OutcomeHandler(
      performance.now(),
      limit,
      input.timeoutMs,
      settle(resolve),
      settle(reject),
      input.keepAnswerBytes,
    );
    // One deadline for connect + send + status line + the bounded read, on top of undici's own
    // idle timeouts, so a consumer that trickles bytes cannot stretch the delivery past timeoutMs.
    const timer = setTimeout(
      () => handler.abort(new DOMException(`no answer within ${input.timeoutMs} ms`, 'TimeoutError')),
      input.timeoutMs,
    );
    const cancel = input.signal;
    if (cancel !== undefined) {
      const onCancel = (): void => handler.abort(asAbortReason(cancel.reason));
      if (cancel.aborted) onCancel();
      else unsubscribe = onAbort(cancel, onCancel);
    }
    try {
      input.dispatcher.dispatch(
        {
          origin,
          path,
          method: 'POST',
          body: input.body,
          headers: input.headers,
          headersTimeout: input.timeoutMs,
          bodyTimeout: input.timeoutMs,
        },
        handler,
      );
    } catch (error) {
      // The pinned dispatcher refuses synchronously (another origin, a loop path).
      handler.fail(error);
    }
  });
}

/** A shutdown's reason as an Error, so transportFailure reads it as an abort. */
const asAbortReason = (reason: unknown): Error =>
  reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
