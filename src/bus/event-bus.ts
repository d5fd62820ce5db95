/**
 * The live bus: after an event's row commits, its id travels by PostgreSQL NOTIFY to every
 * instance sharing the database. The UI stream, MCP resource notifications and the forwarding
 * dispatcher all listen here, so there is one source of "something new arrived" across instances.
 *
 * Nothing publishes through the bus: the store's insert statement announces what it stored
 * (store/events/announcement.ts), so the bus only listens.
 */
export type EventBusListener = (eventIds: readonly string[]) => void;

export interface EventBus {
  /** Returns the function that unsubscribes. */
  subscribe(listener: EventBusListener): () => void;
  close(): Promise<void>;
}
