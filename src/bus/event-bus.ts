/**
 * The live bus: after an event's row commits, its id travels by PostgreSQL NOTIFY to every
 * instance sharing the database. The UI stream and MCP resource notifications both listen here,
 * so there is one source of "something new arrived" across instances.
 */
export type EventBusListener = (eventIds: readonly string[]) => void;

export interface EventBus {
  /** Announce committed events. Call only after the transaction that stored them committed. */
  publish(eventIds: readonly string[]): Promise<void>;
  /** Returns the function that unsubscribes. */
  subscribe(listener: EventBusListener): () => void;
  close(): Promise<void>;
}
