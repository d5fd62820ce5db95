/**
 * The live bus: after an event's row commits, its id travels by PostgreSQL NOTIFY to every
 * instance sharing the database. The UI stream and MCP resource notifications both listen here,
 * so there is one source of "something new arrived" across instances.
 */
import type { Logger } from '../log/logger.ts';
import type { InsertResult } from '../store/event-store.ts';

export type EventBusListener = (eventIds: readonly string[]) => void;

export interface EventBus {
  /** Announce committed events. Call only after the transaction that stored them committed. */
  publish(eventIds: readonly string[]): Promise<void>;
  /** Returns the function that unsubscribes. */
  subscribe(listener: EventBusListener): () => void;
  close(): Promise<void>;
}

/**
 * The group committer's onCommitted for a writer (ingest, queue sources): announces the events a
 * batch newly stored (a duplicate was announced when it was first stored). A failed announcement
 * is logged, not thrown: the rows are committed, and readers catch up on their next page.
 */
export function announceCommitted(bus: Pick<EventBus, 'publish'>, logger: Logger) {
  return (results: readonly InsertResult[]): void => {
    const ids = results.filter((r) => !r.duplicate).map((r) => r.event.id);
    if (ids.length === 0) return;
    bus
      .publish(ids)
      .catch((err: unknown) => logger.warn({ err, count: ids.length }, 'could not announce stored events'));
  };
}
