/**
 * One event on its way to the local app: filtered, checked, fetched from the server, signed on
 * this machine when a secret is given, POSTed with retries, and counted. Events are handled one at
 * a time and at most once per run, and the position moves past an event only once it is dealt
 * with, so a run stopped halfway sends it again next time.
 */
import { Agent, request } from 'undici';
import type { ApiEventSummary, ApiReplayHeaders } from '../../generated/types.ts';
import type { ListenPrinter } from './listen-output.ts';
import { credentialsFor, signingFor, type Signing } from './local-signer.ts';
import type { ListenPosition } from './position.ts';
import { LISTEN_BACKOFF, type RunControl } from './run-control.ts';
import { ServerAnswerError, describeNetworkError, retryAfterMs, type ServerClient } from './server-client.ts';

export interface ListenSummary {
  forwarded: number;
  failed: number;
  skipped: number;
}

export interface LocalDeliveryOptions {
  client: ServerClient;
  control: RunControl;
  printer: ListenPrinter;
  position: ListenPosition;
  summary: ListenSummary;
  target: string;
  providers: readonly string[];
  eventTypes: readonly string[];
  signSecret: string | undefined;
  includeUnverified: boolean;
  maxAttempts: number;
}

export interface LocalDelivery {
  /** One event, at most once per run: filtered, checked, fetched, signed, forwarded, checkpointed. */
  readonly handle: (event: ApiEventSummary) => Promise<void>;
  /** Whether this run has already dealt with the event. */
  handled(id: string): boolean;
  close(): Promise<void>;
}

// A local app may sit at a breakpoint for a while; past this the attempt counts as failed.
const TARGET_TIMEOUT_MS = 15_000;
/** Ids forwarded this run, to send none twice; older ones are behind the cursor anyway. */
const MAX_REMEMBERED = 100_000;

type OutgoingHeaders = Record<string, string | string[]>;

/** The same rule as list_webhook_events: without a dot a type also matches its dotted sub-types. */
export function eventTypeMatches(eventType: string, filter: string): boolean {
  return eventType === filter || (!filter.includes('.') && eventType.startsWith(`${filter}.`));
}

/** The headers of one attempt: the server's replay headers, then fresh credentials (a signature has a timestamp). */
function headersFor(
  info: ApiReplayHeaders,
  body: Buffer,
  signing: Signing | undefined,
  secret: string | undefined,
): { headers: OutgoingHeaders; signed: boolean } {
  const headers: OutgoingHeaders = {};
  for (const [name, value] of Object.entries(info.headers)) if (value !== undefined) headers[name] = value;
  if (secret === undefined || signing === undefined) return { headers, signed: false };
  const credentials = credentialsFor({ signing, event: info, body, secret, nowMs: Date.now() });
  for (const [name, value] of Object.entries(credentials.headers)) headers[name.toLowerCase()] = value;
  return { headers, signed: Object.keys(credentials.headers).length > 0 };
}

interface Fetched {
  info: ApiReplayHeaders;
  body: Buffer;
  /** How to sign it; undefined: it goes unsigned. */
  signing: Signing | undefined;
}

/** POSTs the event to the local app until it answers 2xx or the attempts run out, printing each attempt. */
async function deliver(
  options: LocalDeliveryOptions,
  agent: Agent,
  event: ApiEventSummary,
  { info, body, signing }: Fetched,
): Promise<void> {
  const { control, printer, summary } = options;
  for (let attempt = 1; ; attempt++) {
    control.stopIfAsked();
    const { headers, signed } = headersFor(info, body, signing, options.signSecret);
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    let retryAfter: number | undefined;
    try {
      const response = await request(options.target, {
        method: 'POST',
        headers,
        body,
        dispatcher: agent,
        signal: control.signal,
        headersTimeout: TARGET_TIMEOUT_MS,
        bodyTimeout: TARGET_TIMEOUT_MS,
      });
      status = response.statusCode;
      retryAfter = retryAfterMs(response.headers['retry-after']);
      await response.body.dump();
    } catch (err: unknown) {
      control.stopIfAsked();
      error = describeNetworkError(err);
    }
    const line = {
      id: event.id,
      provider: event.provider,
      event_type: event.event_type,
      status,
      error,
      target: options.target,
      ms: Math.round(performance.now() - started),
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
        ? Math.min(retryAfter, LISTEN_BACKOFF.maxMs)
        : control.delayFor(attempt);
    printer.print({ type: 'attempt_failed', ...line, retry_in_ms: wait });
    await control.pause(wait);
  }
}

export function createLocalDelivery(options: LocalDeliveryOptions): LocalDelivery {
  const { client, control, printer, position, summary } = options;
  const agent = new Agent({ connect: { timeout: TARGET_TIMEOUT_MS } });
  const remembered = new Set<string>();
  const signings = new Map<string, Signing>();

  const matches = (event: ApiEventSummary): boolean =>
    (options.providers.length === 0 || options.providers.includes(event.provider)) &&
    (options.eventTypes.length === 0 || options.eventTypes.some((f) => eventTypeMatches(event.event_type, f)));

  function remember(id: string): void {
    remembered.add(id);
    if (remembered.size > MAX_REMEMBERED) {
      const oldest = remembered.values().next();
      if (oldest.done !== true) remembered.delete(oldest.value);
    }
  }

  async function signingOf(provider: string): Promise<Signing> {
    const known = signings.get(provider);
    if (known !== undefined) return known;
    let signing: Signing;
    try {
      signing = signingFor(await control.fromServer(`GET /api/providers/${provider}`, () => client.provider(provider)));
    } catch (err: unknown) {
      if (!(err instanceof ServerAnswerError && err.status === 404)) throw err;
      signing = { kind: 'none', reason: 'provider no longer configured' };
    }
    signings.set(provider, signing);
    return signing;
  }

  /** The replay headers, the exact bytes and the signing of an event, or why it is skipped. */
  async function fetchEvent(event: ApiEventSummary): Promise<Fetched | { skip: string }> {
    try {
      const info = await control.fromServer(`GET event ${event.id}`, () => client.replayHeaders(event.id));
      if (info.passed_check === false && !options.includeUnverified)
        return { skip: 'it failed its check on arrival (--include-unverified sends it unsigned)' };
      const raw = await control.fromServer(`GET event ${event.id} raw`, () => client.raw(event.id));
      // An event that failed its check goes unsigned, whatever secret was given.
      const signing =
        options.signSecret !== undefined && info.passed_check !== false ? await signingOf(event.provider) : undefined;
      return { info, body: raw.bytes, signing };
    } catch (err: unknown) {
      if (err instanceof ServerAnswerError && err.status === 404) return { skip: 'no longer stored on the server' };
      throw err;
    }
  }

  async function handle(event: ApiEventSummary): Promise<void> {
    if (remembered.has(event.id)) return;
    remember(event.id);
    if (!matches(event)) {
      position.advancePast(event);
      return;
    }
    const fetched = await fetchEvent(event);
    if ('skip' in fetched) {
      summary.skipped++;
      const { id, provider, event_type } = event;
      printer.print({ type: 'skipped', id, provider, event_type, reason: fetched.skip });
    } else {
      await deliver(options, agent, event, fetched);
    }
    position.advancePast(event);
    await position.save();
  }

  return {
    handle,
    handled: (id) => remembered.has(id),
    close: () => agent.destroy(),
  };
}
