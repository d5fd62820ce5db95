/**
 * The listener's side of switchboard's HTTP API: the provider list, the cursor-paged event list,
 * each event's replay-safe headers and exact bytes, and the live stream. Every call carries the
 * bearer token; the answers are checked against the contract's validators, so a server of another
 * version fails loudly instead of being misread.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { Agent, request, type Dispatcher } from 'undici';
import { retryAfterMs } from '../shared/retry-after.ts';
import { ANSWER_LIMITS, AnswerTooLargeError, describeLimit, readBounded } from './bounded-body.ts';
import type { ListOrder } from '../../generated/constants.ts';
import type {
  ApiEventList,
  ApiEventSummary,
  ApiProviderDetail,
  ApiReplayHeaders,
  ApiReplyAnswer,
  ApiReplyAnswerResult,
  ApiReplyRequest,
  ListProvidersOutput,
} from '../../generated/types.ts';
import {
  validateApiEventList,
  validateApiEventSummary,
  validateApiProviderDetail,
  validateApiReplayHeaders,
  validateApiReplyAnswerResult,
  validateApiReplyRequest,
  validateErrorEnvelope,
  validateListProvidersOutput,
} from '../../generated/validators.js';
import { InternalError } from '../errors/internal-error.ts';

/** 401 or 403: a wrong or revoked token, or a Host the server does not accept. Retrying cannot help. */
export class ServerRefusedError extends InternalError {
  readonly code = 'SB_ERR_SERVER_REFUSED';

  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** 429 or 503: come back after retryAfterMs. */
export class ServerBusyError extends InternalError {
  readonly code = 'SB_ERR_SERVER_BUSY';

  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** Any other answer the listener cannot use (400, 404, 5xx, a body off the contract). */
export class ServerAnswerError extends InternalError {
  readonly code = 'SB_ERR_SERVER_ANSWER';

  constructor(
    readonly status: number,
    /** The error envelope's code, when the server sent one (`invalid_argument`, …). */
    readonly serverCode: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The connection failed (refused, reset, timed out): the server may come back. */
export class ServerUnreachableError extends InternalError {
  readonly code = 'SB_ERR_SERVER_UNREACHABLE';
}

interface ListPageQuery {
  since?: string;
  provider?: string;
  eventType?: string;
  /** The server's default (newest first) when absent. */
  order?: ListOrder;
  limit: number;
  cursor?: string;
}

interface RawBody {
  bytes: Buffer;
}

interface StreamHandlers {
  onEvent: (summary: ApiEventSummary) => void;
  /** The server could not replay what was missed; the client must catch up itself. */
  onReset: () => void;
  /** `--reply`: a delivery whose provider waits for the app's answer. */
  onReply?: (request: ApiReplyRequest) => void;
}

interface OpenStream {
  /** Resolves when the stream ends, however it ends (never rejects). */
  readonly closed: Promise<{ reason: string }>;
  close(): void;
}

export interface ServerClient {
  readonly baseUrl: string;
  providers(): Promise<ListProvidersOutput>;
  provider(name: string): Promise<ApiProviderDetail>;
  listEvents(query: ListPageQuery): Promise<ApiEventList>;
  replayHeaders(id: string): Promise<ApiReplayHeaders>;
  /** AnswerTooLargeError past ANSWER_LIMITS.rawBytes. */
  raw(id: string): Promise<RawBody>;
  /**
   * Resolves once the server answered 200 (the stream is subscribed from then on). `reply`
   * (--reply): the providers whose deliveries that wait it answers, comma-separated, or `*`.
   */
  openStream(handlers: StreamHandlers, query?: { reply?: string }): Promise<OpenStream>;
  /** POST /api/replies/{id}: the app's answer to a delivery that waits; ServerAnswerError 409 when late. */
  answerReply(id: string, answer: ApiReplyAnswer): Promise<ApiReplyAnswerResult>;
  close(): Promise<void>;
}

// The server sends a heartbeat comment every 15 s: three missed ones mean the connection is dead.
const STREAM_SILENCE_MS = 45_000;
const REQUEST_TIMEOUT_MS = 20_000;

/** The innermost cause of a network failure, e.g. `connect ECONNREFUSED 127.0.0.1:3000`. */
export function describeNetworkError(err: unknown): string {
  if (err instanceof Error) {
    const code = 'code' in err && typeof err.code === 'string' ? err.code : undefined;
    const cause = err.cause instanceof Error ? describeNetworkError(err.cause) : undefined;
    return cause ?? (code === undefined || err.message.includes(code) ? err.message : `${code}: ${err.message}`);
  }
  return String(err);
}

/** The error an answer other than 2xx stands for, with the server's own message when it sent one. */
async function answerError(response: Dispatcher.ResponseData, what: string): Promise<Error> {
  const start = await readBounded(response, ANSWER_LIMITS.errorBytes, what, true).catch(() => Buffer.alloc(0));
  const text = start.toString('utf8');
  let code: string | undefined;
  let message = `${what}: HTTP ${response.statusCode}`;
  try {
    const parsed: unknown = JSON.parse(text);
    if (validateErrorEnvelope(parsed)) {
      code = parsed.error.code;
      message = parsed.error.message;
    }
  } catch {
    // Not the error envelope (a reverse proxy's page, say): the status says enough.
  }
  const status = response.statusCode;
  if (status === 401 || status === 403) return new ServerRefusedError(status, message);
  if (status === 429 || status === 503)
    return new ServerBusyError(status, retryAfterMs(response.headers['retry-after'], Date.now()), message);
  return new ServerAnswerError(status, code, message);
}

/** A 200's body as JSON, read up to the limit; undefined when it is not JSON (the validator says so). */
async function readJson(response: Dispatcher.ResponseData, what: string): Promise<unknown> {
  let text: string;
  try {
    text = (await readBounded(response, ANSWER_LIMITS.jsonBytes, what)).toString('utf8');
  } catch (err: unknown) {
    if (err instanceof AnswerTooLargeError) throw new ServerAnswerError(200, undefined, err.message);
    throw new ServerUnreachableError(`${what}: ${describeNetworkError(err)}`);
  }
  return parsed(text);
}

/** A GET with the client's timeouts; a connection that fails is ServerUnreachableError. */
async function send(
  url: URL,
  headers: Record<string, string>,
  dispatcher: Dispatcher,
  signal: AbortSignal | undefined,
): Promise<Dispatcher.ResponseData> {
  try {
    return await request(url, {
      method: 'GET',
      headers,
      dispatcher,
      ...(signal === undefined ? {} : { signal }),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
  } catch (err: unknown) {
    throw new ServerUnreachableError(describeNetworkError(err));
  }
}

/** JSON, or undefined when it is not (the validator says what that means). */
function parsed(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

/** The stream's SSE parser: summaries to onEvent, `reset` to onReset, anything unreadable to fail. */
function streamParser(handlers: StreamHandlers, fail: (reason: string) => void): EventSourceParser {
  return createParser({
    maxBufferSize: ANSWER_LIMITS.streamChars,
    onError: (error) => {
      // Other parse errors (an unknown field) are ignored, as an EventSource does.
      if (error.type === 'max-buffer-size-exceeded')
        fail(`a stream message over listen's limit of ${describeLimit(ANSWER_LIMITS.streamChars)}`);
    },
    onEvent: (message) => {
      if (message.event === 'reset') {
        handlers.onReset();
        return;
      }
      if (message.event === 'reply' && handlers.onReply !== undefined) {
        const request = parsed(message.data);
        if (validateApiReplyRequest(request)) handlers.onReply(request);
        else fail('the stream sent a reply request this listen cannot read');
        return;
      }
      if (message.event !== 'event') return;
      const summary = parsed(message.data);
      // A summary off the contract cannot be forwarded or skipped safely: resume from the list.
      if (validateApiEventSummary(summary)) handlers.onEvent(summary);
      else fail('the stream sent an event this listen cannot read');
    },
  });
}

/** Reads /api/stream: summaries to onEvent, `reset` to onReset, until it ends or is closed. */
async function openEventStream(
  url: URL,
  headers: Record<string, string>,
  dispatcher: Dispatcher,
  handlers: StreamHandlers,
  signal: AbortSignal | undefined,
): Promise<OpenStream> {
  const abort = new AbortController();
  const stop = (): void => abort.abort();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted === true) abort.abort();
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: 'GET',
      headers: { ...headers, accept: 'text/event-stream' },
      dispatcher,
      signal: abort.signal,
      headersTimeout: REQUEST_TIMEOUT_MS,
    });
  } catch (err: unknown) {
    signal?.removeEventListener('abort', stop);
    throw new ServerUnreachableError(describeNetworkError(err));
  }
  if (response.statusCode !== 200) {
    signal?.removeEventListener('abort', stop);
    throw await answerError(response, 'GET /api/stream');
  }

  let reason = 'the server closed the stream';
  let silence: NodeJS.Timeout | undefined;
  const watch = (): void => {
    clearTimeout(silence);
    silence = setTimeout(() => {
      reason = `no heartbeat for ${STREAM_SILENCE_MS / 1000} s`;
      abort.abort();
    }, STREAM_SILENCE_MS);
  };
  const parser = streamParser(handlers, (why) => {
    reason = why;
    abort.abort();
  });
  const closed = (async (): Promise<{ reason: string }> => {
    watch();
    try {
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) {
        watch();
        parser.feed(String(chunk));
      }
    } catch (err: unknown) {
      if (!abort.signal.aborted) reason = describeNetworkError(err);
    } finally {
      clearTimeout(silence);
      signal?.removeEventListener('abort', stop);
    }
    return { reason };
  })();
  return {
    closed,
    close: () => {
      reason = 'closed by listen';
      abort.abort();
    },
  };
}

/** POST /api/replies/{id}: the app's answer; the server's result, or the error its answer stands for. */
async function postReplyAnswer(
  target: URL,
  auth: Record<string, string>,
  dispatcher: Dispatcher,
  answer: ApiReplyAnswer,
  signal: AbortSignal | undefined,
): Promise<ApiReplyAnswerResult> {
  const what = `POST ${target.pathname}`;
  let response: Dispatcher.ResponseData;
  try {
    response = await request(target, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(answer),
      dispatcher,
      ...(signal === undefined ? {} : { signal }),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
  } catch (err: unknown) {
    throw new ServerUnreachableError(`${what}: ${describeNetworkError(err)}`);
  }
  if (response.statusCode !== 200) throw await answerError(response, what);
  const body = await readJson(response, what);
  if (!validateApiReplyAnswerResult(body))
    throw new ServerAnswerError(200, undefined, `${what}: the answer is not what this listen expects`);
  return body;
}

export function createServerClient(options: {
  baseUrl: string;
  token: string;
  /** Aborts every request in flight, the stream included (Ctrl-C must not wait for a slow server). */
  signal?: AbortSignal;
}): ServerClient {
  // A base with a path (a reverse proxy's /switchboard/) keeps it: api/… resolves below it.
  const base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  const agent = new Agent({ connect: { timeout: 10_000 } });
  const streamAgent = new Agent({ connect: { timeout: 10_000 }, bodyTimeout: 0 });
  const auth = { authorization: `Bearer ${options.token}` };

  const url = (path: string, query: Record<string, string | undefined> = {}): URL => {
    const target = new URL(path, base);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) target.searchParams.set(key, value);
    return target;
  };

  const get = (path: string, query: Record<string, string | undefined>, accept: string) =>
    send(url(path, query), { ...auth, accept }, agent, options.signal);

  async function getJson<T>(
    path: string,
    query: Record<string, string | undefined>,
    validate: ((value: unknown) => value is T) & { errors?: unknown },
  ): Promise<T> {
    const response = await get(path, query, 'application/json');
    if (response.statusCode !== 200) throw await answerError(response, `GET /${path}`);
    const body = await readJson(response, `GET /${path}`);
    if (!validate(body))
      throw new ServerAnswerError(200, undefined, `GET /${path}: the answer is not what this listen expects`);
    return body;
  }

  return {
    baseUrl: base.href,
    providers: () => getJson('api/providers', {}, validateListProvidersOutput),
    provider: (name) => getJson(`api/providers/${encodeURIComponent(name)}`, {}, validateApiProviderDetail),
    listEvents: (query) =>
      getJson(
        'api/events',
        {
          since: query.since,
          provider: query.provider,
          event_type: query.eventType,
          order: query.order,
          limit: String(query.limit),
          cursor: query.cursor,
        },
        validateApiEventList,
      ),
    replayHeaders: (id) => getJson(`api/events/${encodeURIComponent(id)}/replay-headers`, {}, validateApiReplayHeaders),
    async raw(id) {
      const path = `api/events/${encodeURIComponent(id)}/raw`;
      const response = await get(path, {}, '*/*');
      if (response.statusCode !== 200) throw await answerError(response, `GET /${path}`);
      try {
        return { bytes: await readBounded(response, ANSWER_LIMITS.rawBytes, `GET /${path}`) };
      } catch (err: unknown) {
        if (err instanceof AnswerTooLargeError) throw err;
        throw new ServerUnreachableError(`GET /${path}: ${describeNetworkError(err)}`);
      }
    },
    openStream: (handlers, query = {}) =>
      openEventStream(url('api/stream', { reply: query.reply }), auth, streamAgent, handlers, options.signal),
    answerReply: (id, answer) =>
      postReplyAnswer(url(`api/replies/${encodeURIComponent(id)}`), auth, agent, answer, options.signal),
    async close() {
      await Promise.all([agent.destroy(), streamAgent.destroy()]);
    },
  };
}
