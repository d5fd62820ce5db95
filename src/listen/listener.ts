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
 *
 * This file is the run loop; position.ts keeps the place in the list and local-delivery.ts sends
 * each event to the local app.
 */
import type { ApiEventSummary, ApiReplyRequest, ProviderStatus } from '../../generated/types.ts';
import type { ListenPrinter } from './listen-output.ts';
import { createLocalDelivery, type ListenSummary, type LocalDelivery } from './local-delivery.ts';
import { createPosition, type ListenPosition } from './position.ts';
import { ListenFatalError, Stopped, createRunControl, type RunControl } from './run-control.ts';
import { ServerAnswerError, type ServerClient } from './server-client.ts';

export interface ListenOptions {
  client: ServerClient;
  /** The server URL as the user gave it (for messages and the checkpoint key). */
  server: string;
  target: string;
  providers: readonly string[];
  eventTypes: readonly string[];
  signSecret: string | undefined;
  /** `--sign-for-target`: URL-signing presets sign for the target, not the server's public_url. */
  signForTarget: boolean;
  /** now, an RFC 3339 time or an event id; undefined: the checkpoint, else now. */
  since: string | undefined;
  includeUnverified: boolean;
  maxAttempts: number;
  /**
   * `--reply`: the local app answers the deliveries its providers wait on (reply: {from: listen}):
   * each is sent once, at once, beside the ordinary events, and its answer returned to the server.
   */
  reply: boolean;
  printer: ListenPrinter;
  checkpointFile: string;
  signal: AbortSignal;
}

/** Live events waiting behind a slow local app; past this they are dropped and read again from the list. */
const MAX_PENDING = 5000;
/** A stream that stayed up this long resets the reconnect backoff. */
const STABLE_STREAM_MS = 30_000;

interface Run {
  options: ListenOptions;
  control: RunControl;
  position: ListenPosition;
  delivery: LocalDelivery;
  /** Whether "Ready!" was printed (once per run, after the first catch-up). */
  ready: boolean;
  /** Streams opened so far: every one after the first is a reconnection. */
  connections: number;
  /** Without a secret, the providers followed whose events a secret would sign (checkProviders). */
  unsigned: string[];
  /** --reply answers still running: the run ends after them. */
  replies: Set<Promise<void>>;
}

/** Sends a delivery that waits to the local app at once, beside the ordinary events. */
function answerReply(run: Run, request: ApiReplyRequest): void {
  const work = run.delivery.reply(request).catch(() => undefined);
  run.replies.add(work);
  void work.finally(() => run.replies.delete(work));
}

/**
 * Fails when a provider the filters name is not on the server (a typo would otherwise wait
 * forever). Without a secret, answers which of the providers followed would be signed by one.
 */
async function checkProviders(run: Run): Promise<string[]> {
  const { client, providers: wanted, server } = run.options;
  const { providers } = await run.control.fromServer('GET /api/providers', () => client.providers());
  const known = new Set(providers.map((p) => p.name));
  const unknown = wanted.filter((p) => !known.has(p));
  if (unknown.length > 0) {
    throw new ListenFatalError(
      `${server} has no provider named ${unknown.join(', ')} (it has: ${[...known].join(', ') || 'none'})`,
    );
  }
  if (run.options.signSecret !== undefined) return [];
  const followed = providers.filter((p) => wanted.length === 0 || wanted.includes(p.name));
  return unsignedWithoutSecret(run, followed);
}

/**
 * The providers whose events a secret would sign: token providers, and signed ones unless their
 * scheme is asymmetric (their events go with the provider's own signature, which only the server
 * knows to be so: Standard Webhooks is asymmetric only when configured with public keys).
 */
async function unsignedWithoutSecret(run: Run, followed: readonly ProviderStatus[]): Promise<string[]> {
  const { client } = run.options;
  const names: string[] = [];
  for (const provider of followed) {
    if (provider.trust_mode === 'token') names.push(provider.name);
    if (provider.trust_mode !== 'signed') continue;
    const detail = await run.control.fromServer(`GET /api/providers/${provider.name}`, () =>
      client.provider(provider.name),
    );
    if (detail.verifies_with_public_key !== true) names.push(provider.name);
  }
  return names;
}

/**
 * One connection to the event stream, from opening it to its end: a catch-up first, then live
 * events, each live one read from the list too. Resolves with why the stream ended.
 */
async function followStream(run: Run): Promise<{ reason: string; openedAt: number }> {
  const { options, control, position, delivery } = run;
  const pending: ApiEventSummary[] = [];
  let needCatchUp = true;
  let closed = false;
  let wakeUp: (() => void) | undefined;
  const wake = (): void => {
    const resume = wakeUp;
    wakeUp = undefined;
    resume?.();
  };
  const stream = await control.fromServer('GET /api/stream', () =>
    options.client.openStream(
      {
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
        ...(options.reply ? { onReply: (request: ApiReplyRequest) => answerReply(run, request) } : {}),
      },
      options.reply ? { reply: options.providers.length > 0 ? options.providers.join(',') : '*' } : {},
    ),
  );
  const openedAt = Date.now();
  run.connections++;
  if (run.connections > 1) options.printer.print({ type: 'reconnected', server: options.server });
  void stream.closed.then(() => {
    closed = true;
    wake();
  });
  const onAbort = (): void => stream.close();
  control.signal.addEventListener('abort', onAbort);
  try {
    for (;;) {
      control.stopIfAsked();
      if (needCatchUp) {
        needCatchUp = false;
        await position.catchUp(delivery.handle);
        continue;
      }
      if (pending.length > 0) {
        const batch = pending.splice(0);
        // A live event is the doorbell: the list gives what has committed since the position in
        // the server's order, which the stream does not promise (announcements of events
        // committed a moment apart can overtake each other). What the list did not give, an
        // event that committed late with an earlier time, follows in arrival order.
        if (batch.some((event) => !delivery.handled(event.id))) await position.catchUp(delivery.handle);
        for (const event of batch) await delivery.handle(event);
        continue;
      }
      if (!run.ready) {
        run.ready = true;
        options.printer.print({
          type: 'ready',
          server: options.server,
          target: options.target,
          signing: options.signSecret !== undefined,
          unsigned_providers: run.unsigned,
        });
      }
      if (closed) break;
      await new Promise<void>((resolve) => {
        wakeUp = resolve;
      });
    }
  } finally {
    control.signal.removeEventListener('abort', onAbort);
    stream.close();
  }
  return { reason: (await stream.closed).reason, openedAt };
}

/** Follows the stream until stopped, reconnecting with backoff; a stream that stayed up a while resets it. */
async function runLoop(run: Run): Promise<void> {
  const { options, control } = run;
  let quickFailures = 0;
  while (!control.signal.aborted) {
    const { reason, openedAt } = await followStream(run);
    quickFailures = Date.now() - openedAt > STABLE_STREAM_MS ? 1 : quickFailures + 1;
    const delay = control.delayFor(quickFailures);
    options.printer.print({
      type: 'retry',
      what: 'the event stream',
      error: reason,
      attempt: quickFailures,
      delay_ms: delay,
    });
    await control.pause(delay);
  }
}

export async function listen(options: ListenOptions): Promise<ListenSummary> {
  const { printer, signal } = options;
  const summary: ListenSummary = { forwarded: 0, failed: 0, skipped: 0 };
  const control = createRunControl({ server: options.server, printer, signal });
  const position = createPosition({
    client: options.client,
    control,
    printer,
    key: { server: options.server, providers: options.providers, eventTypes: options.eventTypes },
    since: options.since,
    checkpointFile: options.checkpointFile,
  });
  const delivery = createLocalDelivery({ ...options, control, position, summary });
  const run: Run = {
    options,
    control,
    position,
    delivery,
    ready: false,
    connections: 0,
    unsigned: [],
    replies: new Set(),
  };
  let started = false;
  try {
    run.unsigned = await checkProviders(run);
    const { from } = await position.start();
    started = true;
    printer.print({
      type: 'start',
      server: options.server,
      target: options.target,
      signing: options.signSecret !== undefined,
      from,
      unsigned_providers: run.unsigned,
    });
    await runLoop(run);
  } catch (err: unknown) {
    // An answer listen cannot use (a 400, a body off the contract or over its limit) ends the run.
    if (err instanceof ServerAnswerError) throw new ListenFatalError(`${options.server}: ${err.message}`);
    if (!(err instanceof Stopped)) throw err;
  } finally {
    await Promise.all([...run.replies]);
    await delivery.close();
    // Events passed over by the filters since the last write move the checkpoint too.
    if (started) await position.save();
  }
  printer.print({ type: 'summary', ...summary });
  return summary;
}
