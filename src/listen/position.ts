/**
 * Where a listen run is in the server's event list: where it starts (--since, the checkpoint, or
 * now), how it moves as events are dealt with, the checkpoint file that keeps it across restarts,
 * and the catch-up that pages the list, oldest first, from it.
 */
import { LIST_LIMIT } from '../../generated/constants.ts';
import type { ApiEventSummary, ListenCheckpoint } from '../../generated/types.ts';
import { isEventId } from '../shared/event-id.ts';
import { isBefore } from '../shared/list-order.ts';
import { newCheckpoint, readCheckpoint, writeCheckpoint, type CheckpointKey } from './checkpoint.ts';
import type { ListenPrinter } from './listen-output.ts';
import { ListenFatalError, type RunControl } from './run-control.ts';
import { ServerAnswerError, type ServerClient } from './server-client.ts';

/** A checkpoint older than this is not resumed (the resume window). */
const RESUME_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Where the next catch-up starts: after an event (or, if it was pruned, after its time), after a time, or from the start. */
type Position = { id: string; receivedAt: string | null } | { time: string } | { beginning: true };

export interface PositionOptions {
  client: ServerClient;
  control: RunControl;
  printer: ListenPrinter;
  key: CheckpointKey;
  /** now, an RFC 3339 time or an event id; undefined: the checkpoint, else now. */
  since: string | undefined;
  checkpointFile: string;
}

export interface ListenPosition {
  /** Reads --since or the checkpoint, writes the checkpoint, and says where the run starts from. */
  start(): Promise<{ from: string }>;
  /** Moves past a handled event, never back: a late-committed event does not make the list repeat. */
  advancePast(event: ApiEventSummary): void;
  /** Writes the position to the checkpoint file. */
  save(): Promise<void>;
  /** Reads the list after the position, oldest first, page by page, handing each event over. */
  catchUp(handle: (event: ApiEventSummary) => Promise<void>): Promise<void>;
}

/** The newest stored event (the list's default order is newest first). */
async function newestPosition({ client, control }: PositionOptions): Promise<Position> {
  const page = await control.fromServer('GET /api/events', () => client.listEvents({ limit: 1 }));
  const [newest] = page.events;
  return newest === undefined ? { beginning: true } : { id: newest.id, receivedAt: newest.received_at };
}

/** The checkpoint's position when it is readable and under 24 hours old, else now (with a warning why). */
async function fromCheckpoint(options: PositionOptions): Promise<{ position: Position; from: string }> {
  const { printer } = options;
  const read = await readCheckpoint(options.checkpointFile);
  if (read.kind === 'unreadable') {
    printer.print({
      type: 'warning',
      message: `ignoring checkpoint ${options.checkpointFile} (${read.reason}); starting from now`,
    });
    return { position: await newestPosition(options), from: 'from now' };
  }
  if (read.kind === 'absent') return { position: await newestPosition(options), from: 'from now' };
  const saved = read.checkpoint;
  const age = Date.now() - Date.parse(saved.updated_at);
  if (!(age <= RESUME_WINDOW_MS)) {
    printer.print({
      type: 'warning',
      message: `the checkpoint is from ${saved.updated_at}, more than 24 hours ago; starting from now (use --since to catch up further back)`,
    });
    return { position: await newestPosition(options), from: 'from now' };
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

async function startingPoint(options: PositionOptions): Promise<{ position: Position; from: string }> {
  const since = options.since;
  if (since === 'now') return { position: await newestPosition(options), from: 'from now (--since now)' };
  if (since === undefined) return fromCheckpoint(options);
  return isEventId(since)
    ? { position: { id: since.toLowerCase(), receivedAt: null }, from: `after event ${since}` }
    : { position: { time: since }, from: `since ${since}` };
}

const singleFilter = (values: readonly string[]): string | undefined => (values.length === 1 ? values[0] : undefined);

/** next_cursor values remembered per catch-up, to notice one handed back again; older ones are let go. */
const MAX_SEEN_CURSORS = 10_000;

/**
 * The RFC 3339 time one microsecond before `time` (the resolution of received_at), so that a list
 * `since` it, which is exclusive, starts with the events of that very microsecond.
 * @internal outside src/, only tests or benches use it
 */
export function microsecondBefore(time: string): string | undefined {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i.exec(time);
  if (match?.[1] === undefined || match[3] === undefined) return undefined;
  const wholeSeconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(wholeSeconds)) return undefined;
  // Finer digits than microseconds round down: the list compares with the time floored the same way.
  const micros = BigInt(wholeSeconds) * 1000n + BigInt((match[2] ?? '').padEnd(6, '0').slice(0, 6)) - 1n;
  const seconds = micros / 1_000_000n - (micros % 1_000_000n < 0n ? 1n : 0n);
  const fraction = micros - seconds * 1_000_000n;
  const text = new Date(Number(seconds) * 1000).toISOString();
  return `${text.slice(0, 19)}.${fraction.toString().padStart(6, '0')}Z`;
}

function listPage(options: PositionOptions, since: string | undefined, cursor: string | undefined) {
  const provider = singleFilter(options.key.providers);
  const eventType = singleFilter(options.key.eventTypes);
  return options.control.fromServer('catch-up (GET /api/events)', () =>
    options.client.listEvents({
      order: 'oldest_first',
      limit: LIST_LIMIT.maximum,
      ...(since === undefined ? {} : { since }),
      ...(cursor === undefined ? {} : { cursor }),
      ...(provider === undefined ? {} : { provider }),
      ...(eventType === undefined ? {} : { eventType }),
    }),
  );
}

/**
 * Pages the list after `from`, oldest first, handing each event over. When the event `from`
 * names is no longer stored (pruned, deleted), the list refuses it as `since`: the catch-up then
 * starts at the microsecond it was received and passes over what came before it there.
 */
async function catchUpFrom(
  options: PositionOptions,
  from: Position,
  handle: (event: ApiEventSummary) => Promise<void>,
): Promise<void> {
  const { control } = options;
  let since: string | undefined = 'id' in from ? from.id : 'time' in from ? from.time : undefined;
  let passOver: ((event: ApiEventSummary) => boolean) | undefined;
  let cursor: string | undefined;
  const seen = new Set<string>();
  for (;;) {
    let page;
    try {
      page = await listPage(options, since, cursor);
    } catch (err: unknown) {
      const gone = err instanceof ServerAnswerError && err.serverCode === 'invalid_argument' && cursor === undefined;
      if (gone && 'id' in from && since === from.id && from.receivedAt !== null) {
        const { id, receivedAt } = from;
        options.printer.print({
          type: 'warning',
          message: `event ${id} is no longer stored; catching up from ${receivedAt}`,
        });
        since = microsecondBefore(receivedAt) ?? receivedAt;
        passOver = (event) => event.id === id || isBefore(event, { received_at: receivedAt, id });
        continue;
      }
      if (err instanceof ServerAnswerError) throw new ListenFatalError(`${control.server}: ${err.message}`);
      throw err;
    }
    for (const event of page.events) {
      control.stopIfAsked();
      if (passOver?.(event) !== true) await handle(event);
    }
    const next = page.next_cursor;
    if (next === undefined) return;
    // A server that hands back a cursor it gave before would keep listen paging the same events forever.
    if (seen.has(next))
      throw new ListenFatalError(
        `${control.server}: the event list handed back next_cursor ${JSON.stringify(next)} again while catching up, so it would never end`,
      );
    seen.add(next);
    if (seen.size > MAX_SEEN_CURSORS) seen.delete(seen.values().next().value ?? next);
    cursor = next;
  }
}

export function createPosition(options: PositionOptions): ListenPosition {
  const checkpoint: ListenCheckpoint = newCheckpoint(options.key);
  let position: Position = { beginning: true };

  async function save(): Promise<void> {
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

  return {
    async start() {
      const start = await startingPoint(options);
      position = start.position;
      await save();
      return { from: start.from };
    },
    advancePast(event) {
      if (
        'id' in position &&
        position.receivedAt !== null &&
        isBefore(event, { received_at: position.receivedAt, id: position.id })
      )
        return;
      position = { id: event.id, receivedAt: event.received_at };
    },
    save,
    catchUp: (handle) => catchUpFrom(options, position, handle),
  };
}
