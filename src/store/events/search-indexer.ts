/**
 * Fills event_search (the payload's jsonb and tsvector, behind GIN indexes) for events that ingest
 * queued in event_search_queue. Indexing costs several times what storing an event does, so it is
 * kept off the path a webhook waits on and held to a share of the time (a duty cycle) while a
 * young backlog drains and new events keep arriving, leaving the database to ingest first. Once
 * nothing new arrives, or once the backlog is older than maxLagMs, it is worked through at full
 * speed, so a sustained stream cannot leave search ever further behind. Search stays complete
 * meanwhile: queued events are matched on the fly by the list query, at a cost per queued event.
 *
 * Each batch commits asynchronously (synchronous_commit off for its transaction only): the queue
 * entries it deletes and the search rows it writes are lost together if the server crashes before
 * the WAL writer flushes them, which puts the entries back in the queue. So no webhook's commit
 * waits behind an fsync for derived data (docs/adr/ingest-performance.md).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from '../../log/logger.ts';

export interface SearchIndexerOptions {
  pool: DatabasePool;
  logger: Logger;
  /** Events indexed per statement; default 200. */
  batchSize?: number;
  /**
   * Share of wall time spent indexing while there is a backlog and events keep arriving, in
   * (0, 1]; default 0.25. After such a batch took t ms, the indexer rests t × (1 − share) / share
   * ms. With no arrival since the previous batch it does not rest.
   */
  busyShare?: number;
  /** How often an empty queue is looked at again, in ms; default 500. */
  idleIntervalMs?: number;
  /**
   * When the newest event a full batch indexed arrived more than this many ms ago, the indexer is
   * that far behind and does not rest, arrivals or not; default 2,000.
   */
  maxLagMs?: number;
  /**
   * Whether ingest in this process is saturated (ingest-pressure.ts). While it is, the indexer
   * starts no batch, leaving the database to the webhooks, until it is maxBurstLagMs behind; then
   * it indexes as it would otherwise (at full speed, being more than maxLagMs behind) until it is
   * within maxLagMs again. Absent, as in a worker-only process, it never rests for ingest.
   */
  ingestPressed?: () => boolean;
  /** How far behind the indexer may fall while ingest is saturated, in ms; default 4,000. */
  maxBurstLagMs?: number;
  /** After a failed batch (the database is down, say), how long until the next attempt, in ms; default 5,000. */
  retryAfterErrorMs?: number;
}

export interface SearchIndexer {
  /**
   * Indexes everything queued now, ignoring the duty cycle, and returns once the background loop's
   * batch in progress has committed too; answers how many entries drain itself took.
   */
  drain(): Promise<number>;
  stop(): Promise<void>;
}

const DEFAULT_BATCH_SIZE = 200;
const DEFAULT_BUSY_SHARE = 0.25;
const DEFAULT_IDLE_INTERVAL_MS = 500;
const DEFAULT_MAX_LAG_MS = 2_000;
/** Under the keep-up target (a backlog of less than 5 s of ingest at 1,000 deliveries/s). */
const DEFAULT_MAX_BURST_LAG_MS = 4_000;
/** While ingest is saturated, how often the indexer looks again. */
const PRESSED_RECHECK_MS = 100;
const DEFAULT_RETRY_AFTER_ERROR_MS = 5_000;

const takenRow = z.object({
  taken: z.number().int(),
  newest: z.string().nullable(),
  last_taken: z.string().nullable(),
});

/** @internal outside src/, only tests or benches use it */
export interface BatchResult {
  taken: number;
  /** The newest queued id when the batch started: a newer one next time means events arrived. */
  newest: string | null;
  /** The newest id this batch indexed. */
  last_taken: string | null;
}

/**
 * One batch in one statement: take queue entries (SKIP LOCKED, so several instances share the work
 * without waiting on each other), write their search rows, delete the entries. Entries whose event
 * is gone (retention) are deleted without a row. Answers how many entries were taken.
 * @internal outside src/, only tests or benches use it
 */
export async function indexQueuedEvents(pool: DatabasePool, limit: number): Promise<number> {
  return (await indexQueuedBatch(pool, limit)).taken;
}

// Each event indexed is locked (FOR KEY SHARE, as a foreign key's check would): one deleted after
// this statement's snapshot is skipped, so no search row outlives its event; one deleted after the
// lock waits for this batch, and its delete trigger then takes the new row (migration 0014).
// Each event is fetched by its own primary-key probe (a LATERAL subquery with LIMIT 1), never by a
// join the planner may choose: on a partition nothing has analysed yet (autovacuum off, or behind
// after a burst) it took `id = …` to match 0.5 % of the rows and hash-joined the batch against a
// sequential scan of the whole partition, so every batch cost more as the table grew and search
// fell minutes behind at 1,000 events/s (docs/adr/search-vector-cost.md).
async function indexQueuedBatch(pool: DatabasePool, limit: number): Promise<BatchResult> {
  const row = await pool.one(sql.type(takenRow)`
    WITH taken AS (
      DELETE FROM event_search_queue
      WHERE event_id IN (
        SELECT event_id FROM event_search_queue ORDER BY event_id LIMIT ${limit} FOR UPDATE SKIP LOCKED
      )
      RETURNING event_id
    ),
    indexed AS (
      INSERT INTO event_search (event_id, event_received_at, payload_json, payload_tsv)
      SELECT events.id, events.received_at, switchboard_payload_jsonb(events.payload),
        switchboard_payload_tsvector(events.payload)
      FROM taken CROSS JOIN LATERAL (
        SELECT events.id, events.received_at, events.payload FROM events
        WHERE events.id = taken.event_id LIMIT 1 FOR KEY SHARE OF events
      ) AS events
      ON CONFLICT (event_id, event_received_at) DO NOTHING
    )
    SELECT
      (SELECT count(*)::int FROM taken) AS taken,
      -- Ids are UUIDv7, so the largest is the latest arrival; the primary key answers this from
      -- one index page (there is no max(uuid) before PostgreSQL 18). The statement's snapshot
      -- still shows the entries taken above.
      (SELECT event_id::text FROM event_search_queue ORDER BY event_id DESC LIMIT 1) AS newest,
      (SELECT event_id::text FROM taken ORDER BY event_id DESC LIMIT 1) AS last_taken,
      -- Derived data: this transaction's commit need not wait for its WAL to reach the disk (see
      -- the file comment). Local to the transaction, so the pooled connection is unaffected.
      set_config('synchronous_commit', 'off', true) AS asynchronous_commit
  `);
  return row;
}

/**
 * Whether events were queued between two batches, from the newest queued id each one saw. With
 * nothing to compare (the first batch), assume so. UUIDv7 text sorts as the ids do; an instance
 * whose clock lags goes unnoticed, which only costs its deliveries some of the database time a
 * rest would have left them.
 */
/**
 * Milliseconds since a UUIDv7 was made, from the Unix time in its first 48 bits; 0 for null.
 * @internal outside src/, only tests or benches use it
 */
export function ageOfUuidv7(id: string | null, nowMs: number = Date.now()): number {
  if (id === null) return 0;
  const made = Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
  return Number.isFinite(made) ? Math.max(0, nowMs - made) : 0;
}

function arrivedSince(previous: string | null | undefined, newest: string | null): boolean {
  if (previous === undefined) return true;
  if (newest === null) return false;
  return previous === null || newest > previous;
}

/**
 * Wall-clock time (ms) before which every event is indexed, as far as a batch that started at
 * startedAt tells: one short of full emptied the queue as its statement saw it, so everything that
 * had arrived by then is indexed; a full one got as far as its newest event.
 */
function indexedUpToAfter(result: BatchResult, batchSize: number, startedAt: number): number {
  if (result.taken < batchSize || result.last_taken === null) return startedAt;
  return Date.now() - ageOfUuidv7(result.last_taken);
}

/** @internal outside src/, only tests or benches use it */
export interface RestPolicy {
  batchSize: number;
  busyShare: number;
  idleIntervalMs: number;
  maxLagMs: number;
}

/**
 * How long the loop rests after a batch that took `elapsed` ms, with events arriving meanwhile or not.
 * @internal outside src/, only tests or benches use it
 */
export function restAfter(result: BatchResult, elapsed: number, arriving: boolean, policy: RestPolicy): number {
  if (result.taken < policy.batchSize) return policy.idleIntervalMs;
  // The oldest event still queued arrived after the newest one this batch indexed.
  const lag = ageOfUuidv7(result.last_taken);
  // Behind by more than maxLagMs: a sustained stream would outrun the duty cycle for good. Without
  // arrivals, resting would only leave search matching the backlog on the fly for longer.
  if (!arriving || lag > policy.maxLagMs) return 0;
  // Arrivals mean ingest is busy and comes first, but the rest ends where the backlog reaches
  // maxLagMs: a batch slowed by a loaded machine earns a rest of three times its length (at the
  // default share), which would otherwise carry the backlog that far past the bound unnoticed.
  return Math.min((elapsed * (1 - policy.busyShare)) / policy.busyShare, policy.maxLagMs - lag);
}

/** The options as the loop reads them: each default filled in, the batch size and busy share kept in range. */
function timingsOf(options: SearchIndexerOptions): {
  policy: RestPolicy;
  maxBurstLagMs: number;
  retryAfterErrorMs: number;
} {
  return {
    policy: {
      batchSize: Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE),
      busyShare: Math.min(1, Math.max(0.01, options.busyShare ?? DEFAULT_BUSY_SHARE)),
      idleIntervalMs: options.idleIntervalMs ?? DEFAULT_IDLE_INTERVAL_MS,
      maxLagMs: options.maxLagMs ?? DEFAULT_MAX_LAG_MS,
    },
    maxBurstLagMs: options.maxBurstLagMs ?? DEFAULT_MAX_BURST_LAG_MS,
    retryAfterErrorMs: options.retryAfterErrorMs ?? DEFAULT_RETRY_AFTER_ERROR_MS,
  };
}

/**
 * Starts the background loop. While ingest in the same process is saturated it starts no batch
 * until maxBurstLagMs behind (indexedUpTo null: a backlog from before the start, of unknown age),
 * then catches up to within maxLagMs before giving way again: resting whenever it dipped under the
 * bound would index in step with arrivals at best, and fall behind for good whenever a batch is slow.
 */
export function startSearchIndexer(options: SearchIndexerOptions): SearchIndexer {
  const { pool, logger, ingestPressed } = options;
  const { policy, maxBurstLagMs, retryAfterErrorMs } = timingsOf(options);
  const { batchSize, maxLagMs } = policy;
  const stopping = new AbortController();
  let failing = false;
  let lastNewest: string | null | undefined;
  let indexedUpTo: number | null = null;
  let catchingUp = true;
  // The loop's batch in progress: drain() waits for it, since entries it took are invisible to
  // drain's own SKIP LOCKED reads until it commits.
  let inFlight: Promise<boolean> = Promise.resolve(true);

  const rest = (ms: number): Promise<void> =>
    delay(ms, undefined, { signal: stopping.signal, ref: false }).catch(() => undefined);

  async function loop(): Promise<void> {
    while (!stopping.signal.aborted) {
      if (indexedUpTo === null || Date.now() - indexedUpTo >= maxBurstLagMs) catchingUp = true;
      if (!catchingUp && ingestPressed?.()) {
        await rest(PRESSED_RECHECK_MS);
        continue;
      }
      const started = performance.now();
      const startedAt = Date.now();
      let result: BatchResult;
      try {
        const batch = indexQueuedBatch(pool, batchSize);
        inFlight = batch.then(
          () => true,
          () => false,
        );
        result = await batch;
        if (failing) logger.info('search indexer running again');
        failing = false;
      } catch (error: unknown) {
        if (stopping.signal.aborted) return;
        // Logged once per outage, not once per retry.
        if (!failing) logger.warn({ err: error }, 'search indexing failed; retrying');
        failing = true;
        await rest(retryAfterErrorMs);
        continue;
      }
      const elapsed = performance.now() - started;
      indexedUpTo = indexedUpToAfter(result, batchSize, startedAt);
      if (Date.now() - indexedUpTo < maxLagMs) catchingUp = false;
      const wait = restAfter(result, elapsed, arrivedSince(lastNewest, result.newest), policy);
      lastNewest = result.newest;
      if (wait > 0) await rest(wait);
    }
  }

  const running = loop();

  return {
    async drain() {
      let total = 0;
      for (;;) {
        const pending = inFlight;
        const taken = await indexQueuedEvents(pool, batchSize);
        total += taken;
        if (taken > 0) continue;
        // Empty to us, but the loop's batch may hold entries: done once it has committed and no
        // other has started since. A failed batch put its entries back, so look again.
        const committed = await pending;
        if (committed && pending === inFlight) return total;
      }
    },
    async stop() {
      stopping.abort();
      await running;
    },
  };
}
