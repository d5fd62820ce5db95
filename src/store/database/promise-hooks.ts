/**
 * slonik marks the async work of a transaction with an AsyncLocalStorage (its only use: a query
 * on another connection from inside a transaction fails instead of deadlocking). On Node 20 an
 * AsyncLocalStorage, once run, turns on the process's async_hooks promise hooks for good: from
 * then on every promise any code creates runs an init hook, and V8 leaves its fast paths for
 * promises and `await`. Every server process runs transactions at start-up (migrations,
 * partitions), so every later webhook and forwarded delivery paid for them
 * (docs/adr/forward-cost-per-delivery.md, "Seventh step").
 *
 * The storage is turned off again whenever no transaction is running; slonik's next transaction
 * turns it on (AsyncLocalStorage.run does), so a transaction still sees its own context, and the
 * foreign-connection check still holds inside every transaction.
 */
import { transactionContext } from 'slonik/dist/contexts/transactionContext.js';

let installed = false;
let running = 0;

function ended(): void {
  running -= 1;
  // Work a finished transaction left behind keeps its context on its own resources; only the
  // hooks that hand the context on to new promises stop.
  if (running === 0) transactionContext.disable();
}

/** Counts slonik's transactions and turns the storage off when the last one ends. Idempotent. */
export function releasePromiseHooksBetweenTransactions(): void {
  if (installed) return;
  installed = true;
  const run = transactionContext.run.bind(transactionContext);
  transactionContext.run = <R, A extends unknown[]>(
    store: { transactionId: string },
    callback: (...args: A) => R,
    ...args: A
  ): R => {
    running += 1;
    let result: R;
    try {
      result = run(store, callback, ...args);
    } catch (error) {
      ended();
      throw error;
    }
    if (result instanceof Promise) result.then(ended, ended);
    else ended();
    return result;
  };
}

/**
 * Whether slonik's storage (and so the process's promise hooks, when nothing else enabled them) is on.
 * @internal outside src/, only tests or benches use it
 */
export const transactionContextEnabled = (): boolean =>
  // Node 20 keeps the flag as a plain field of the instance.
  (transactionContext as unknown as { enabled?: boolean }).enabled === true;
