/**
 * `switchboard listen`: follows a remote switchboard and POSTs each new event that matches the
 * filters to a local URL, with the exact stored bytes and the replay-safe headers, signed on this
 * machine when a secret is given. Nothing is lost and nothing is sent twice in a run:
 *
 * - On every (re)connection the stream is opened first, so everything committed from then on is
 *   buffered, and only then is the backlog read from the cursor-paged list, oldest first, after
 *   the last event handled; the buffered live events follow, minus those the list already gave.
 *   Live, each new event also reads the list from the position first, so events go out in the
 *   list's order even when two announcements overtake each other.
 * - Events are handled one at a time, in order: a failing local app holds the rest back (each
 *   event is retried up to --max-attempts) instead of being raced past.
 * - The checkpoint file is written after each event handled, so a restart resumes after it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { LIST_LIMIT } from '../../generated/constants.ts';
import type { ApiEventSummary, ListenCheckpoint } from '../../generated/types.ts';
import { isEventId } from '../store/event-id.ts';
import { newCheckpoint, readCheckpoint, writeCheckpoint, type CheckpointKey } from './checkpoint.ts';
import type { ListenPrinter } from './listen-output.ts';
import { credentialsFor, signingFor, type Signing } from './local-signer.ts';
import {
  ServerAnswerError,
  ServerBusyError,
  ServerRefusedError,
  ServerUnreachableError,
  describeNetworkError,
  retryAfterMs,
  type ServerClient,
} from './server-client.ts';

export interface ListenOptions {
  client: ServerClient;
  /** The server URL as the user gave it (for messages and the checkpoint key). */
  server: string;
  target: string;
  providers: readonly string[];
  eventTypes: readonly string[];
  signSecret: string | undefined;
  /** now, an RFC 3339 time or an event id; undefined: the checkpoint, else now. */
  since: string | undefined;
  includeUnverified: boolean;
  maxAttempts: number;
  printer: ListenPrinter;
  checkpointFile: string;
  signal: AbortSignal;
}

export interface ListenSummary {
  forwarded: number;
  failed: number;
  skipped: number;
}

/** A reason listen cannot go on (a refused token, an unknown provider): exit 1 with the message. */
export class ListenFatalError extends Error {}

/** A checkpoint older than this is not resumed (the resume window). */
export const RESUME_WINDOW_MS = 24 * 60 * 60 * 1000;
const BACKOFF = { initialMs: 500, maxMs: 30_000 };
// A local app may sit at a breakpoint for a while; past this the attempt counts as failed.
const TARGET_TIMEOUT_MS = 15_000;
/** Live events waiting behind a slow local app; past this they are dropped and read again from the list. */
const MAX_PENDING = 5000;
/** Ids forwarded this run, to send none twice; older ones are behind the cursor anyway. */
const MAX_REMEMBERED = 100_000;
/** A stream that stayed up this long resets the reconnect backoff. */
const STABLE_STREAM_MS = 30_000;

class Stopped extends Error {}

type OutgoingHeaders = Record<string, string | string[]>;

/** The same rule as list_webhook_events: without a dot a type also matches its dotted sub-types. */
export function eventTypeMatches(eventType: string, filter: string): boolean {
  return eventType === filter || (!filter.includes('.') && eventType.startsWith(`${filter}.`));
}

/** Whether the event comes before the position in the list's order, (received_at, id). */
function isBefore(event: ApiEventSummary, receivedAt: string, id: string): boolean {
  const at = Date.parse(event.received_at);
  const then = Date.parse(receivedAt);
  if (at !== then) return at < then;
  // Same millisecond: the server writes both in one format, so the text orders the microseconds too.
  if (event.received_at !== receivedAt) return event.received_at < receivedAt;
  return event.id < id;
}

/** Where the next catch-up starts: after an event (or, if it was pruned, after its time), after a time, or from the start. */
type Position = { id: string; receivedAt: string | null } | { time: string } | { beginning: true };

export async function listen(options: ListenOptions): Promise<ListenSummary> {
  const { client, printer, signal } = options;
  const backoff = BACKOFF;
  const summary: ListenSummary = { forwarded: 0, failed: 0, skipped: 0 };
  const targetAgent = new Agent({ connect: { timeout: TARGET_TIMEOUT_MS } });
  const key: CheckpointKey = { server: options.server, providers: options.providers, eventTypes: options.eventTypes };
  const checkpoint: ListenCheckpoint = newCheckpoint(key);
  const remembered = new Set<string>();
  const signings = new Map<string, Signing>();
  let position: Position = { beginning: true };

  const delayFor = (attempt: number): number => {
    const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
    // Half fixed, half jitter: never a hot loop, and many listeners do not retry in step.
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  };
  const pause = async (ms: number): Promise<void> => {
    try {
      await sleep(ms, undefined, { signal });
    } catch {
      throw new Stopped();
    }
  };
  const stopIfAsked = (): void => {
    if (signal.aborted) throw new Stopped();
  };

  /** A server call, retried while the server is away or busy; a refused token ends listen. */
  async function fromServer<T>(what: string, call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      stopIfAsked();
      try {
        return await call();
      } catch (err: unknown) {
        stopIfAsked();
        if (err instanceof ServerRefusedError) throw new ListenFatalError(`${options.server}: ${err.message}`);
        let delay: number;
        if (err instanceof ServerBusyError) delay = err.retryAfterMs ?? delayFor(attempt);
        else if (err instanceof ServerUnreachableError) delay = delayFor(attempt);
        else if (err instanceof ServerAnswerError && err.status >= 500) delay = delayFor(attempt);
        else throw err;
        printer.print({ type: 'retry', what, error: err.message, attempt, delay_ms: delay });
        await pause(delay);
      }
    }
  }

  async function saveCheckpoint(): Promise<void> {
    if ('id' in position) {
      checkpoint.last_event_id = position.id;
      checkpoint.last_received_at = position.receivedAt;
    } else {
      checkpoint.last_event_id = null;
      checkpoint.last_received_at = 'time' in position ? position.time : null;
    }
    checkpoint.updated_at = new Date().toISOString();
    await writeCheckpoint(options.checkpointFile, checkpoint);
  }

  /** The newest stored event (the list's default order is newest first). */
  async function newestPosition(): Promise<Position> {
    const page = await fromServer('GET /api/events', () => client.listEvents({ limit: 1 }));
    const [newest] = page.events;
    return newest === undefined ? { beginning: true } : { id: newest.id, receivedAt: newest.received_at };
  }

  async function startPosition(): Promise<{ position: Position; from: string }> {
    const since = options.since;
    if (since === 'now') return { position: await newestPosition(), from: 'from now (--since now)' };
    if (since !== undefined) {
      return isEventId(since)
        ? { position: { id: since.toLowerCase(), receivedAt: null }, from: `after event ${since}` }
        : { position: { time: since }, from: `since ${since}` };
    }
    const read = await readCheckpoint(options.checkpointFile);
    if (read.kind === 'unreadable') {
      printer.print({
        type: 'warning',
        message: `ignoring checkpoint ${options.checkpointFile} (${read.reason}); starting from now`,
      });
      return { position: await newestPosition(), from: 'from now' };
    }
    if (read.kind === 'absent') return { position: await newestPosition(), from: 'from now' };
    const saved = read.checkpoint;
    const age = Date.now() - Date.parse(saved.updated_at);
    if (!(age <= RESUME_WINDOW_MS)) {
      printer.print({
        type: 'warning',
        message: `the checkpoint is from ${saved.updated_at}, more than 24 hours ago; starting from now (use --since to catch up further back)`,
      });
      return { position: await newestPosition(), from: 'from now' };
    }
    if (saved.last_event_id !== null)
      return {
        position: { id: saved.last_event_id, receivedAt: saved.last_received_at },
        from: `resuming after event ${saved.last_event_id}`,
      };
    if (saved.last_received_at !== null)
      return { position: { time: saved.last_received_at }, from: `resuming since ${saved.last_received_at}` };
    return { position: { beginning: true }, from: 'resuming from the start' };
  }

  const matches = (event: ApiEventSummary): boolean =>
    (options.providers.length === 0 || options.providers.includes(event.provider)) &&
    (options.eventTypes.length === 0 || options.eventTypes.some((f) => eventTypeMatches(event.event_type, f)));

  async function signingOf(provider: string): Promise<Signing> {
    const known = signings.get(provider);
    if (known !== undefined) return known;
    let signing: Signing;
    try {
      signing = signingFor(await fromServer(`GET /api/providers/${provider}`, () => client.provider(provider)));
    } catch (err: unknown) {
      if (!(err instanceof ServerAnswerError && err.status === 404)) throw err;
      signing = { kind: 'none', reason: 'provider no longer configured' };
    }
    signings.set(provider, signing);
    return signing;
  }

  function remember(id: string): void {
    remembered.add(id);
    if (remembered.size > MAX_REMEMBERED) {
      const oldest = remembered.values().next();
      if (oldest.done !== true) remembered.delete(oldest.value);
    }
  }

  async function deliver(
    event: ApiEventSummary,
    body: Buffer,
    headersFor: () => { headers: OutgoingHeaders; signed: boolean },
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      stopIfAsked();
      const { headers, signed } = headersFor();
      const started = performance.now();
      let status: number | null = null;
      let error: string | null = null;
      let retryAfter: number | undefined;
      try {
        const response = await request(options.target, {
          method: 'POST',
          headers,
          body,
          dispatcher: targetAgent,
          signal,
          headersTimeout: TARGET_TIMEOUT_MS,
          bodyTimeout: TARGET_TIMEOUT_MS,
        });
        status = response.statusCode;
        retryAfter = retryAfterMs(response.headers['retry-after']);
        await response.body.dump();
      } catch (err: unknown) {
        stopIfAsked();
        error = describeNetworkError(err);
      }
      const ms = Math.round(performance.now() - started);
      const line = {
        id: event.id,
        provider: event.provider,
        event_type: event.event_type,
        status,
        error,
        target: options.target,
        ms,
        attempt,
        max_attempts: options.maxAttempts,
        signed,
      };
      if (status !== null && status >= 200 && status < 300) {
        summary.forwarded++;
        printer.print({ type: 'forwarded', ...line });
        return;
      }
      if (attempt >= options.maxAttempts) {
        summary.failed++;
        printer.print({ type: 'failed', ...line });
        return;
      }
      const wait =
        (status === 429 || status === 503) && retryAfter !== undefined
          ? Math.min(retryAfter, backoff.maxMs)
          : delayFor(attempt);
      printer.print({ type: 'attempt_failed', ...line, retry_in_ms: wait });
      await pause(wait);
    }
  }

  /** One event, at most once per run: filtered, checked, fetched, signed, forwarded, checkpointed. */
  async function handle(event: ApiEventSummary): Promise<void> {
    if (remembered.has(event.id)) return;
    remember(event.id);
    // The position moves past an event only once it is dealt with (stopped halfway, it is sent
    // again next run), and never back: a late-committed event does not make the list repeat.
    const advance = (): void => {
      if ('id' in position && position.receivedAt !== null && isBefore(event, position.receivedAt, position.id)) return;
      position = { id: event.id, receivedAt: event.received_at };
    };
    const done = async (): Promise<void> => {
      advance();
      await saveCheckpoint();
    };
    if (!matches(event)) {
      advance();
      return;
    }
    const skip = async (reason: string): Promise<void> => {
      summary.skipped++;
      printer.print({ type: 'skipped', id: event.id, provider: event.provider, event_type: event.event_type, reason });
      await done();
    };
    let fetched;
    try {
      const info = await fromServer(`GET event ${event.id}`, () => client.replayHeaders(event.id));
      if (info.passed_check === false && !options.includeUnverified)
        return await skip('it failed its check on arrival (--include-unverified sends it unsigned)');
      const raw = await fromServer(`GET event ${event.id} raw`, () => client.raw(event.id));
      fetched = { info, bytes: raw.bytes };
    } catch (err: unknown) {
      if (err instanceof ServerAnswerError && err.status === 404) return await skip('no longer stored on the server');
      throw err;
    }
    const { info, bytes } = fetched;
    const secret = options.signSecret;
    // An event that failed its check goes unsigned, whatever secret was given.
    const signing = secret !== undefined && info.passed_check !== false ? await signingOf(event.provider) : undefined;
    await deliver(event, bytes, () => {
      const headers: OutgoingHeaders = {};
      for (const [name, value] of Object.entries(info.headers)) if (value !== undefined) headers[name] = value;
      if (secret === undefined || signing === undefined) return { headers, signed: false };
      const credentials = credentialsFor({ signing, event: info, body: bytes, secret, nowMs: Date.now() });
      for (const [name, value] of Object.entries(credentials.headers)) headers[name.toLowerCase()] = value;
      return { headers, signed: Object.keys(credentials.headers).length > 0 };
    });
    await done();
  }

  const singleFilter = (values: readonly string[]): string | undefined => (values.length === 1 ? values[0] : undefined);

  /** Reads the list after the position, oldest first, page by page, handling each event. */
  async function catchUp(): Promise<void> {
    let since: string | undefined = 'id' in position ? position.id : 'time' in position ? position.time : undefined;
    const fallback = 'id' in position ? position.receivedAt : null;
    let cursor: string | undefined;
    do {
      let page;
      try {
        const current = since;
        const pageCursor = cursor;
        page = await fromServer('catch-up (GET /api/events)', () =>
          client.listEvents({
            order: 'oldest_first',
            limit: LIST_LIMIT.maximum,
            ...(current === undefined ? {} : { since: current }),
            ...(pageCursor === undefined ? {} : { cursor: pageCursor }),
            ...(singleFilter(options.providers) === undefined ? {} : { provider: singleFilter(options.providers) }),
            ...(singleFilter(options.eventTypes) === undefined ? {} : { eventType: singleFilter(options.eventTypes) }),
          }),
        );
      } catch (err: unknown) {
        // The event the position names was pruned: go on from when it was received.
        if (
          err instanceof ServerAnswerError &&
          err.code === 'invalid_argument' &&
          cursor === undefined &&
          since !== undefined &&
          isEventId(since) &&
          fallback !== null
        ) {
          printer.print({
            type: 'warning',
            message: `event ${since} is no longer stored; catching up from ${fallback}`,
          });
          since = fallback;
          continue;
        }
        if (err instanceof ServerAnswerError) throw new ListenFatalError(`${options.server}: ${err.message}`);
        throw err;
      }
      for (const event of page.events) {
        stopIfAsked();
        await handle(event);
      }
      cursor = page.next_cursor;
    } while (cursor !== undefined);
  }

  let started = false;
  try {
    const { providers } = await fromServer('GET /api/providers', () => client.providers());
    const known = new Set(providers.map((p) => p.name));
    const unknown = options.providers.filter((p) => !known.has(p));
    if (unknown.length > 0) {
      throw new ListenFatalError(
        `${options.server} has no provider named ${unknown.join(', ')} (it has: ${[...known].join(', ') || 'none'})`,
      );
    }
    const start = await startPosition();
    position = start.position;
    started = true;
    await saveCheckpoint();
    printer.print({
      type: 'start',
      server: options.server,
      target: options.target,
      signing: options.signSecret !== undefined,
      from: start.from,
    });

    let ready = false;
    let connections = 0;
    let quickFailures = 0;
    while (!signal.aborted) {
      const pending: ApiEventSummary[] = [];
      let needCatchUp = true;
      let closed = false;
      let wakeUp: (() => void) | undefined;
      const wake = (): void => {
        const resume = wakeUp;
        wakeUp = undefined;
        resume?.();
      };
      const stream = await fromServer('GET /api/stream', () =>
        client.openStream({
          onEvent: (event) => {
            pending.push(event);
            if (pending.length > MAX_PENDING) {
              // The list has them all: read them from there once the local app catches up.
              pending.length = 0;
              needCatchUp = true;
            }
            wake();
          },
          onReset: () => {
            needCatchUp = true;
            wake();
          },
        }),
      );
      const openedAt = Date.now();
      connections++;
      if (connections > 1) printer.print({ type: 'reconnected', server: options.server });
      void stream.closed.then(() => {
        closed = true;
        wake();
      });
      const onAbort = (): void => stream.close();
      signal.addEventListener('abort', onAbort);
      try {
        for (;;) {
          stopIfAsked();
          if (needCatchUp) {
            needCatchUp = false;
            await catchUp();
            continue;
          }
          if (pending.length > 0) {
            const batch = pending.splice(0);
            // A live event is the doorbell: the list gives what has committed since the position in
            // the server's order, which the stream does not promise (announcements of events
            // committed a moment apart can overtake each other). What the list did not give, an
            // event that committed late with an earlier time, follows in arrival order.
            if (batch.some((event) => !remembered.has(event.id))) await catchUp();
            for (const event of batch) await handle(event);
            continue;
          }
          if (!ready) {
            ready = true;
            printer.print({
              type: 'ready',
              server: options.server,
              target: options.target,
              signing: options.signSecret !== undefined,
            });
          }
          if (closed) break;
          await new Promise<void>((resolve) => {
            wakeUp = resolve;
          });
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        stream.close();
      }
      const { reason } = await stream.closed;
      quickFailures = Date.now() - openedAt > STABLE_STREAM_MS ? 1 : quickFailures + 1;
      const delay = delayFor(quickFailures);
      printer.print({
        type: 'retry',
        what: 'the event stream',
        error: reason,
        attempt: quickFailures,
        delay_ms: delay,
      });
      await pause(delay);
    }
  } catch (err: unknown) {
    if (!(err instanceof Stopped)) throw err;
  } finally {
    await targetAgent.destroy();
    // Events passed over by the filters since the last write move the checkpoint too.
    if (started) await saveCheckpoint();
  }
  printer.print({ type: 'summary', ...summary });
  return summary;
}
