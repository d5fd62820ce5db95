/**
 * What `switchboard serve` prints on a terminal as events arrive, the way `stripe listen` does
 * and in the same parts as `switchboard listen` (shared/terminal-line.ts): one line per event
 * stored, accepted or rejected, once its row has committed and the bus has announced it, and one
 * per forward attempt once it is settled:
 *
 *   12:01:02  --> github push …5d6e  Verified  <-- 200
 *   12:01:02  --> github push …5d6e  → app 200 in 12 ms
 *
 * The trust badge is the UI's short label (shared/trust-words.ts). Every value is escaped for the
 * terminal first: an event type is whatever the sender wrote. Nothing else of a delivery is shown
 * (no header, no payload, no summary line), so no credential can reach the line; the event type is
 * read only from fields whose names do not look like one (verify/schemes/template.ts).
 */
import type { EventBus } from '../bus/event-bus.ts';
import type { SettledAttempt } from '../forward/forward-dispatcher.ts';
import type { Logger } from '../log/logger.ts';
import type { Arrival, PgEventStore } from '../store/events/pg-event-store.ts';
import { clock, painter, shortId, type Paint } from '../shared/terminal-line.ts';
import { escapeForTerminal } from '../shared/terminal-text.ts';
import { TRUST_LABELS, trustLevel } from '../shared/trust-words.ts';

export interface ServeTerminal {
  /** Writes whole lines to the terminal. */
  out: (text: string) => void;
  /** Colours: a terminal without NO_COLOR. */
  colour: boolean;
  now?: () => Date;
}

/** The event's part of a line: who sent it, its type and its short id, escaped. */
const eventPart = (provider: string, eventType: string, id: string): string =>
  `--> ${escapeForTerminal(provider)} ${escapeForTerminal(eventType)} ${shortId(id)}`;

const isSuccess = (status: number): boolean => status >= 200 && status <= 299;

/** An event as stored: its badge and the status its sender was answered (none for a queue message). */
function arrivalLine(event: Arrival, at: string, paint: Paint): string {
  const level = trustLevel(event.trust_mode, event.verified);
  const badge = paint(level === 'verified' ? 'green' : level === 'failed' ? 'red' : 'yellow', TRUST_LABELS[level][1]);
  const status = event.responseStatus;
  const answer = status === null ? '' : `  <-- ${paint(isSuccess(status) ? 'green' : 'red', String(status))}`;
  return `${at}  ${eventPart(event.provider, event.event_type, event.id)}  ${badge}${answer}`;
}

/** A forward attempt: the rule, what the consumer answered (or why nothing came back) and how long it took. */
function attemptLine(attempt: SettledAttempt, at: string, paint: Paint): string {
  const { event } = attempt.delivery;
  const { status, error, ms } = attempt.record;
  const outcome =
    status !== null
      ? paint(isSuccess(status) ? 'green' : 'red', String(status))
      : paint('red', escapeForTerminal(error ?? 'no answer'));
  const dead = attempt.outcome === 'dead' ? paint('red', ', gave up') : '';
  const rule = escapeForTerminal(attempt.rule);
  const took = ms === null ? '' : ` in ${Math.round(ms)} ms`;
  return `${at}  ${eventPart(event.provider, event.eventType, event.id)}  → ${rule} ${outcome}${took}${dead}`;
}

/** Prints a line for every event the bus announces, read back from the store. Returns the unsubscribe. */
export function printArrivals(options: {
  terminal: ServeTerminal;
  bus: Pick<EventBus, 'subscribe'>;
  store: Pick<PgEventStore, 'arrivals'>;
  logger: Logger;
}): () => void {
  const { terminal } = options;
  const now = terminal.now ?? ((): Date => new Date());
  const paint = painter(terminal.colour);
  // One read at a time, in the order announced, so lines come out in the order events committed.
  let printing = Promise.resolve();
  return options.bus.subscribe((ids) => {
    printing = printing
      .then(async () => {
        const events = await options.store.arrivals(ids);
        if (events.length === 0) return;
        const at = clock(now());
        terminal.out(events.map((event) => `${arrivalLine(event, at, paint)}\n`).join(''));
      })
      .catch((err: unknown) => options.logger.debug({ err }, 'could not read announced events for the terminal'));
  });
}

/** Prints a line for every settled forward attempt. */
export function attemptPrinter(terminal: ServeTerminal): (attempt: SettledAttempt) => void {
  const now = terminal.now ?? ((): Date => new Date());
  const paint = painter(terminal.colour);
  return (attempt) => terminal.out(`${attemptLine(attempt, clock(now()), paint)}\n`);
}
