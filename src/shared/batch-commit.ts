/**
 * The batching both hot paths share: values wait in a queue, each with the promise its caller
 * awaits; one statement commits a whole batch; when that statement fails, the batch is committed
 * value by value, so one value the database refuses fails alone instead of taking its neighbours
 * down with it. Ingest's group commit (store/events/group-commit.ts) batches inserts this way, and the
 * forward dispatcher batches the settles of finished attempts (forward/rule-worker.ts).
 */

/** A value waiting for its batch, and how its waiter learns what became of it. */
export interface Waiting<T, R> {
  value: T;
  resolve: (result: R) => void;
  reject: (error: Error) => void;
}

/** Queues `value`; resolves once a batch carrying it committed (with its result), rejects if it failed. */
export function waitInQueue<T, R>(queue: Waiting<T, R>[], value: T): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    queue.push({ value, resolve, reject });
  });
}

export interface BatchCommit<T, R> {
  /** One statement for the whole batch: a result for each value, in order. */
  all: (values: T[]) => Promise<readonly R[]>;
  /** One value alone, after its batch failed. */
  one: (value: T) => Promise<R>;
  /** Whether a batch's failure is worth retrying value by value (not when the database is down). Default: yes. */
  isolate?: (error: unknown) => boolean;
  /** Told before a failed batch is retried value by value. */
  onIsolate?: (error: unknown, size: number) => void;
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** Commits `batch` and settles each waiter; never rejects (each waiter hears of its own failure). */
export async function commitBatch<T, R>(batch: readonly Waiting<T, R>[], commit: BatchCommit<T, R>): Promise<void> {
  let results: readonly R[];
  try {
    results = await commit.all(batch.map((waiting) => waiting.value));
  } catch (error: unknown) {
    if (batch.length > 1 && (commit.isolate?.(error) ?? true)) {
      commit.onIsolate?.(error, batch.length);
      await Promise.all(batch.map((waiting) => commitOne(waiting, commit)));
      return;
    }
    for (const waiting of batch) waiting.reject(asError(error));
    return;
  }
  if (results.length !== batch.length) {
    const error = new Error(`a batch of ${batch.length} values committed with ${results.length} results`);
    for (const waiting of batch) waiting.reject(error);
    return;
  }
  batch.forEach((waiting, index) => waiting.resolve(results[index] as R));
}

async function commitOne<T, R>(waiting: Waiting<T, R>, commit: BatchCommit<T, R>): Promise<void> {
  try {
    waiting.resolve(await commit.one(waiting.value));
  } catch (error: unknown) {
    waiting.reject(asError(error));
  }
}
