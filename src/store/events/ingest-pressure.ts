/**
 * Whether ingest in this process is saturated, from the group commits it makes: under light load a
 * flush carries one or a few events, and only when the database cannot keep up do events pile up
 * behind the flushes in flight, so that each flush carries many. The search indexer of the same
 * process reads it to leave the database to ingest during a burst (search-indexer.ts).
 */
export interface IngestPressure {
  /** The group committer reports each flush it starts, with its number of events. */
  flushed(events: number): void;
  /** Flushes started lately carried, on average, at least `minBatch` events. */
  pressed(): boolean;
}

export interface IngestPressureOptions {
  /** Default 16: at 1,000 deliveries/s a flush carries that many only when it waits 16 ms or more. */
  minBatch?: number;
  /** A flush older than this says nothing about now; default 500 ms. */
  windowMs?: number;
  now?: () => number;
}

/** How much each flush moves the running average of events per flush. */
const WEIGHT = 0.25;

export function createIngestPressure(options: IngestPressureOptions = {}): IngestPressure {
  const minBatch = options.minBatch ?? 16;
  const windowMs = options.windowMs ?? 500;
  const now = options.now ?? (() => performance.now());
  let average = 0;
  let last = Number.NEGATIVE_INFINITY;
  return {
    flushed(events) {
      const at = now();
      average = at - last > windowMs ? events : average + (events - average) * WEIGHT;
      last = at;
    },
    pressed() {
      return now() - last <= windowMs && average >= minBatch;
    },
  };
}
