import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { ApiEventSummary, ApiReplyRequest } from '../../generated/types.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { AppError, invalidArgument } from '../errors/app-error.ts';
import { normalizeEventId } from '../shared/event-id.ts';
import { isBefore, type ListPlace } from '../shared/list-order.ts';
import type { EventStore } from '../store/events/event-store.ts';

export interface EventStreamOptions {
  /** For the backlog of a resumed stream. */
  store: Pick<EventStore, 'listWithSummaries' | 'summaries'>;
  /** New events, fetched once per batch for every open stream. */
  live: LiveSummaries;
  /**
   * Calls back once the caller's token is revoked (watchCaller); the stream then closes. Returns
   * the function that stops watching.
   */
  untilRevoked?: (onRevoked: () => void) => () => void;
  /** Comment lines keep proxies and the browser from timing the connection out; default 15 s. */
  heartbeatMs?: number;
  /** Past this many missed events a resume sends `reset` instead of replaying them; default 1000. */
  maxBackfill?: number;
  /** A client this far behind is cut off (it resumes with Last-Event-ID); default 1 MiB. */
  maxBufferedBytes?: number;
  /** Aborting ends every open stream, so the server can shut down. */
  signal?: AbortSignal;
  /**
   * `switchboard listen --reply`: attaches the stream to the deliveries that wait for an answer,
   * each sent as a `reply` message; returns the function that detaches it.
   */
  offerReplies?: (offer: (request: ApiReplyRequest) => void) => () => void;
}

const DEFAULT_HEARTBEAT_MS = 15_000;
/** See where it is set: four listeners of switchboard's and seven of Node's pipeline, with room. */
const SSE_RESPONSE_CLOSE_LISTENERS = 16;
const DEFAULT_MAX_BACKFILL = 1000;
const DEFAULT_MAX_BUFFERED = 1024 * 1024;
const BACKFILL_PAGE = 200;
const RECONNECT_MS = 2000;
// Ids recently sent, to drop a bus echo of an event the backfill already delivered.
const RECENT_IDS = 2000;

/**
 * An event's message. Its SSE id is where a client resumes from (Last-Event-ID: every event after
 * that one in the list's order), so an event placed before one already sent goes without an id:
 * its own would move the client's resume point back, and the resume would send again what came
 * after it. The client keeps the previous id (EventSource does, and so does the UI's reader).
 */
function eventMessage(summary: ApiEventSummary, resumesHere: boolean): string {
  const id = resumesHere ? `id: ${summary.id}\n` : '';
  return `event: event\n${id}data: ${JSON.stringify(summary)}\n\n`;
}

/** A delivery that waits for the app's answer: no id, since it is no place in the list to resume from. */
function replyMessage(request: ApiReplyRequest): string {
  return `event: reply\ndata: ${JSON.stringify(request)}\n\n`;
}

function resetMessage(reason: string): string {
  return `event: reset\ndata: ${JSON.stringify({ reason })}\n\n`;
}

class RecentIds {
  private readonly ids = new Set<string>();
  has(id: string): boolean {
    return this.ids.has(id);
  }
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > RECENT_IDS) {
      const oldest = this.ids.values().next();
      if (oldest.done !== true) this.ids.delete(oldest.value);
    }
  }
}

/** The parsed Last-Event-ID, or undefined when absent; a malformed one is the caller's error. */
export function lastEventId(ctx: Context): string | undefined {
  const value = ctx.get('last-event-id').trim();
  if (value === '') return undefined;
  const id = normalizeEventId(value);
  if (id === null) throw invalidArgument('Last-Event-ID: expected an event id');
  return id;
}

/** What a stream starts with: the events after `after` (Last-Event-ID's event; none without one), or a reset. */
type Backfill =
  { kind: 'events'; events: ApiEventSummary[]; after?: ApiEventSummary } | { kind: 'reset'; reason: string };

/** One batch of new events as every stream receives it, or the failure to read it. */
type LiveBatch = { kind: 'summaries'; summaries: readonly ApiEventSummary[] } | { kind: 'failed'; error: unknown };

export interface LiveSummaries {
  /** Batches in arrival order, from now on; returns the function that unsubscribes. */
  subscribe(listener: (batch: LiveBatch) => void): () => void;
}

/**
 * The one reader of new events for all open streams: it listens on the bus while any stream is
 * open and fetches each batch's summaries once, then hands the same batch to every stream, which
 * keeps what it has not sent yet. Per-stream queries would make each webhook cost a query per open
 * stream, and anyone who can reach an open route or get a reject recorded can send webhooks.
 */
export function createLiveSummaries(options: {
  store: Pick<EventStore, 'summaries'>;
  bus: Pick<EventBus, 'subscribe'>;
}): LiveSummaries {
  const listeners = new Set<(batch: LiveBatch) => void>();
  let unsubscribeBus: (() => void) | undefined;
  // Batches are read one at a time, so every stream sees them in arrival order.
  let chain: Promise<void> = Promise.resolve();
  const onIds = (ids: readonly string[]): void => {
    chain = chain.then(async () => {
      if (listeners.size === 0) return;
      let batch: LiveBatch;
      try {
        batch = { kind: 'summaries', summaries: await options.store.summaries(ids) };
      } catch (error: unknown) {
        batch = { kind: 'failed', error };
      }
      for (const listener of [...listeners]) {
        try {
          listener(batch);
        } catch {
          // One stream's failure to take a batch is that stream's (its socket events close it);
          // the others, and the batches after this one, must still be delivered.
        }
      }
    });
  };
  return {
    subscribe(listener) {
      listeners.add(listener);
      unsubscribeBus ??= options.bus.subscribe(onIds);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && unsubscribeBus !== undefined) {
          unsubscribeBus();
          unsubscribeBus = undefined;
        }
      };
    },
  };
}

async function backfill(options: EventStreamOptions, since: string, max: number): Promise<Backfill> {
  const [after] = await options.store.summaries([since]);
  if (after === undefined)
    return { kind: 'reset', reason: 'Last-Event-ID is not a stored event (pruned?); reload the list' };
  const newestFirst: ApiEventSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await options.store.listWithSummaries({
      since,
      limit: BACKFILL_PAGE,
      ...(cursor === undefined ? {} : { cursor }),
    });
    newestFirst.push(...page.events);
    if (newestFirst.length > max)
      return { kind: 'reset', reason: `more than ${max} events were missed; reload the list` };
    cursor = page.next_cursor;
  } while (cursor !== undefined);
  return { kind: 'events', events: newestFirst.reverse(), after };
}

/**
 * Serves /api/stream. It subscribes to the live batches before reading the backlog, so an event
 * committed while the backlog is read is either in it or buffered live (never neither), and the
 * recent-id set drops the one that is both.
 *
 * A notification can also arrive long after its event committed (the LISTEN connection and the
 * pool are separate, and a loaded machine delays either): a resumed stream may then hear of an
 * event the client already had, from an earlier stream's backlog or live. So a resumed stream
 * sends only events placed after Last-Event-ID's event, as its backlog does: the client has the
 * rest by its own word, and an event that came again would also, as the newest id the client
 * got, make its next resume send everything after it once more.
 *
 * The backlog is read before the response starts, so a database failure on resume is a proper 503
 * rather than a stream that opens and dies. Any later store failure ends the stream: the client
 * resumes with Last-Event-ID, which beats silently skipping an event.
 * One response's life (backfill, live events, heartbeat, back-pressure, end) over the state every
 * part of it changes.
 */
export async function serveEventStream(
  ctx: Context,
  options: EventStreamOptions,
  resumeFrom: string | undefined,
): Promise<void> {
  const log = ctx.state.log;
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED;
  // Until the stream is set up, live batches wait here.
  const buffered: LiveBatch[] = [];
  let live = false;
  const unsubscribe = options.live.subscribe((batch) => (live ? onBatch(batch) : buffered.push(batch)));

  let backlog: Backfill = { kind: 'events', events: [] };
  if (resumeFrom !== undefined) {
    try {
      backlog = await backfill(options, resumeFrom, options.maxBackfill ?? DEFAULT_MAX_BACKFILL);
    } catch (err: unknown) {
      if (!(err instanceof AppError && err.code === 'invalid_argument')) {
        unsubscribe();
        throw err;
      }
      backlog = { kind: 'reset', reason: err.message };
    }
  }
  if (ctx.req.destroyed || options.signal?.aborted === true) {
    unsubscribe();
    return;
  }

  const out = new PassThrough();
  const sent = new RecentIds();
  // Last-Event-ID's event, at or before which nothing is sent; then the newest event sent, whose
  // id is the client's resume point (see eventMessage).
  const floor: ListPlace | undefined = backlog.kind === 'events' ? backlog.after : undefined;
  let resumePoint = floor;
  let closed = false;
  let stopWatching: () => void = () => undefined;
  let stopOffers: () => void = () => undefined;
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    stopWatching();
    stopOffers();
    unsubscribe();
    options.signal?.removeEventListener('abort', close);
    out.end();
  };
  const write = (text: string): void => {
    if (closed) return;
    out.write(text);
    // A client that stopped reading must not make the server hold its backlog forever.
    if (out.writableLength > maxBuffered) {
      log.info({ buffered: out.writableLength }, 'event stream: client too slow, closing');
      close();
    }
  };
  const send = (summary: ApiEventSummary): void => {
    if (sent.has(summary.id) || (floor !== undefined && !isBefore(floor, summary))) return;
    sent.add(summary.id);
    const newest = resumePoint === undefined || isBefore(resumePoint, summary);
    if (newest) resumePoint = summary;
    write(eventMessage(summary, newest));
  };
  const fail = (err: unknown): void => {
    if (!closed) log.warn({ err }, 'event stream: store read failed, closing so the client resumes');
    close();
  };

  const onBatch = (batch: LiveBatch): void => {
    if (closed) return;
    if (batch.kind === 'failed') fail(batch.error);
    else for (const summary of batch.summaries) send(summary);
  };
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
  options.signal?.addEventListener('abort', close);
  ctx.req.once('close', close);
  ctx.res.once('close', close);
  stopWatching =
    options.untilRevoked?.(() => {
      log.info('event stream: its token was revoked, closing');
      close();
    }) ?? stopWatching;

  ctx.status = 200;
  ctx.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Accel-Buffering': 'no',
  });
  // A stream's response carries a fixed set of 'close' listeners, not a growing one: the server's
  // unanswered-response tracking, the stream slot, this stream, its gauge, and the seven Node's
  // pipeline adds when koa pipes the body. That passes the default warning threshold of ten.
  ctx.res.setMaxListeners(SSE_RESPONSE_CLOSE_LISTENERS);
  ctx.body = out;
  write(`retry: ${RECONNECT_MS}\n: connected\n\n`);
  if (backlog.kind === 'reset') write(resetMessage(backlog.reason));
  else for (const summary of backlog.events) send(summary);
  for (const batch of buffered.splice(0)) onBatch(batch);
  live = true;
  if (!closed) stopOffers = options.offerReplies?.((request) => write(replyMessage(request))) ?? stopOffers;
}
