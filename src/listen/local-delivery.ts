/**
 * One event on its way to the local app: filtered, checked, fetched from the server, signed on
 * this machine when a secret is given, POSTed with retries, and counted. Events are handled one at
 * a time and at most once per run, and the position moves past an event only once it is dealt
 * with, so a run stopped halfway sends it again next time.
 */
import { Agent, request } from 'undici';
import type { ApiEventSummary, ApiReplayHeaders, ApiReplyRequest } from '../../generated/types.ts';
import { withOriginalQuery } from '../shared/url-query.ts';
import { EVENT_ID_HEADER, SENDABLE_HEADER_VALUE, isNeverSent } from '../shared/header-names.ts';
import { retryAfterMs } from '../shared/retry-after.ts';
import { AnswerTooLargeError, describeLimit } from './bounded-body.ts';
import type { ListenPrinter } from './listen-output.ts';
import {
  credentialsFor,
  originalCredentials,
  secretHeadersOf,
  signedForTarget,
  signingFor,
  type Signing,
} from './local-signer.ts';
import type { ListenPosition } from './position.ts';
import { LISTEN_BACKOFF, type RunControl } from './run-control.ts';
import { ServerAnswerError, describeNetworkError, type ServerClient } from './server-client.ts';
import { askLocalApp } from './reply-delivery.ts';

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
  /**
   * `--sign-for-target`: a preset that signs the URL it is called at signs for the target (the
   * local app's own URL) rather than the server's public_url, so a stock middleware that checks the
   * URL it was called at (twilio.webhook()) accepts the delivery unchanged.
   */
  signForTarget: boolean;
  includeUnverified: boolean;
  maxAttempts: number;
}

export interface LocalDelivery {
  /** One event, at most once per run: filtered, checked, fetched, signed, forwarded, checkpointed. */
  readonly handle: (event: ApiEventSummary) => Promise<void>;
  /**
   * `--reply`: a delivery its provider waits on, sent to the local app once, its answer returned
   * with the answer call. Runs beside handle(), which then passes the event by.
   */
  readonly reply: (request: ApiReplyRequest) => Promise<void>;
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
function eventTypeMatches(eventType: string, filter: string): boolean {
  return eventType === filter || (!filter.includes('.') && eventType.startsWith(`${filter}.`));
}

/** What listen learns of a provider from GET /api/providers/{name}, once per run. */
interface ProviderFacts {
  signing: Signing;
  /** Its signature and token headers: never copied from the server's answer. */
  secretHeaders: readonly string[];
  /** Its preset signs the URL it is called at (the server gave its public URL): the query is signed too. */
  signsUrl: boolean;
}

interface Fetched {
  info: ApiReplayHeaders;
  body: Buffer;
  provider: ProviderFacts;
  /** Whether to sign: a secret was given and the event did not fail its check on arrival. */
  sign: boolean;
  /**
   * Where this event goes: the target, with the query string the delivery arrived with appended
   * for a preset that signs its URL (which is then signed over the query it carries).
   */
  url: URL;
}

/**
 * The headers of one attempt, assembled as the server's outbound path assembles a replay's: what
 * the server's answer lists, minus the never-sent list (the one the server applies) and the
 * provider's secret headers; then the Content-Type, the marker with the event's own id, and fresh
 * credentials (a signature has a timestamp, so each attempt gets its own).
 */
function headersFor(
  event: ApiEventSummary,
  { info, body, provider, sign, url }: Fetched,
  secret: string | undefined,
): { headers: OutgoingHeaders; body: Buffer; signed: boolean } {
  const headers: OutgoingHeaders = {};
  for (const [rawName, value] of Object.entries(info.headers)) {
    const name = rawName.toLowerCase();
    if (value === undefined || isNeverSent(name) || provider.secretHeaders.includes(name)) continue;
    const values = typeof value === 'string' ? [value] : value;
    if (values.length > 0 && values.every((v) => SENDABLE_HEADER_VALUE.test(v))) headers[name] = value;
  }
  const contentType = info.headers['content-type'];
  if (typeof contentType === 'string' && SENDABLE_HEADER_VALUE.test(contentType)) headers['content-type'] = contentType;
  headers[EVENT_ID_HEADER] = event.id;
  // An asymmetric scheme's event goes with its original signature (no secret needed or usable).
  const original = originalCredentials(info);
  if (original !== null) return { headers: { ...headers, ...original }, body, signed: true };
  if (secret === undefined || !sign) return { headers, body, signed: false };
  const credentials = credentialsFor({
    signing: provider.signing,
    event: info,
    body,
    secret,
    nowMs: Date.now(),
    query: provider.signsUrl ? url.search.slice(1) : undefined,
  });
  for (const [name, value] of Object.entries(credentials.headers)) headers[name.toLowerCase()] = value;
  // A body credential (Figma's passcode) comes back as the body with it put in.
  const sent = 'body' in credentials && credentials.body !== undefined ? credentials.body : body;
  return { headers, body: sent, signed: Object.keys(credentials.headers).length > 0 || sent !== body };
}

/** POSTs the event to the local app until it answers 2xx or the attempts run out, printing each attempt. */
async function deliver(
  options: LocalDeliveryOptions,
  agent: Agent,
  event: ApiEventSummary,
  fetched: Fetched,
): Promise<void> {
  const { control, printer, summary } = options;
  for (let attempt = 1; ; attempt++) {
    control.stopIfAsked();
    const { headers, body, signed } = headersFor(event, fetched, options.signSecret);
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    let retryAfter: number | undefined;
    try {
      const response = await request(fetched.url, {
        method: 'POST',
        headers,
        body,
        dispatcher: agent,
        signal: control.signal,
        headersTimeout: TARGET_TIMEOUT_MS,
        bodyTimeout: TARGET_TIMEOUT_MS,
      });
      status = response.statusCode;
      retryAfter = retryAfterMs(response.headers['retry-after'], Date.now());
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

// One closure over the run's state (the ids dealt with, the providers learned, the
// agent to the local app) that each of its steps, from filter to checkpoint, reads and changes.
export function createLocalDelivery(options: LocalDeliveryOptions): LocalDelivery {
  const { client, control, printer, position, summary } = options;
  const agent = new Agent({ connect: { timeout: TARGET_TIMEOUT_MS } });
  const remembered = new Set<string>();
  const providers = new Map<string, ProviderFacts>();
  /** Events answered through --reply that the list has not passed by yet. */
  const replied = new Set<string>();

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

  async function providerFacts(name: string): Promise<ProviderFacts> {
    const known = providers.get(name);
    if (known !== undefined) return known;
    let facts: ProviderFacts;
    try {
      const detail = await control.fromServer(`GET /api/providers/${name}`, () => client.provider(name));
      facts = {
        signing: signingFor(options.signForTarget ? signedForTarget(detail, options.target) : detail),
        secretHeaders: secretHeadersOf(detail),
        signsUrl: detail.public_url !== undefined,
      };
    } catch (err: unknown) {
      if (!(err instanceof ServerAnswerError && err.status === 404)) throw err;
      facts = {
        signing: { kind: 'none', reason: 'provider no longer configured' },
        secretHeaders: [],
        signsUrl: false,
      };
    }
    providers.set(name, facts);
    return facts;
  }

  /** The replay headers, the exact bytes and the provider of an event, or why it is skipped. */
  async function fetchEvent(event: ApiEventSummary): Promise<Fetched | { skip: string }> {
    try {
      const info = await control.fromServer(`GET event ${event.id}`, () => client.replayHeaders(event.id));
      // Forward rules never take a handshake (the server says which events are): neither does listen.
      if (info.handshake)
        return { skip: 'it is a registration handshake, which switchboard answered for the provider' };
      if (info.passed_check === false && !options.includeUnverified)
        return { skip: 'it failed its check on arrival (--include-unverified sends it unsigned)' };
      const raw = await control.fromServer(`GET event ${event.id} raw`, () => client.raw(event.id));
      const provider = await providerFacts(event.provider);
      // An event that failed its check goes unsigned, whatever secret was given.
      const url = info.query === undefined ? new URL(options.target) : withOriginalQuery(options.target, info.query);
      return {
        info,
        body: raw.bytes,
        provider,
        sign: options.signSecret !== undefined && info.passed_check !== false,
        url,
      };
    } catch (err: unknown) {
      if (err instanceof ServerAnswerError && err.status === 404) return { skip: 'no longer stored on the server' };
      if (err instanceof AnswerTooLargeError)
        return { skip: `its body is over listen's limit of ${describeLimit(err.limit)}` };
      throw err;
    }
  }

  async function handle(event: ApiEventSummary): Promise<void> {
    // Answered through --reply: the position moves past it here, in the list's order.
    if (replied.delete(event.id)) {
      remember(event.id);
      position.advancePast(event);
      return;
    }
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

  async function reply(request: ApiReplyRequest): Promise<void> {
    const { event } = request;
    if (!remembered.has(event.id)) replied.add(event.id);
    const started = performance.now();
    const fetched = await fetchEvent(event).catch((err: unknown) => ({ skip: describeNetworkError(err) }));
    const local =
      'skip' in fetched
        ? { answer: { failure: 'failed' as const }, status: null, error: fetched.skip }
        : await (() => {
            const { headers, body } = headersFor(event, fetched, options.signSecret);
            return askLocalApp({
              url: fetched.url,
              headers,
              body,
              agent,
              timeoutMs: request.timeout_ms,
              maxBytes: request.max_answer_bytes,
              signal: control.signal,
            });
          })();
    let outcome: string;
    try {
      outcome = (await client.answerReply(request.reply_id, local.answer)).outcome;
    } catch (err: unknown) {
      // 409: another listener answered first, or the server's wait ended.
      outcome = err instanceof ServerAnswerError && err.status === 409 ? 'late' : describeNetworkError(err);
    }
    if (outcome === 'answered') summary.forwarded++;
    else summary.failed++;
    const { id, provider, event_type } = event;
    printer.print({
      type: 'replied',
      ...{ id, provider, event_type, status: local.status, error: local.error, target: options.target },
      ms: Math.round(performance.now() - started),
      outcome,
    });
  }

  return {
    handle,
    reply,
    handled: (id) => remembered.has(id),
    close: () => agent.destroy(),
  };
}
