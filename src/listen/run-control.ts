/**
 * What every part of a listen run shares: the stop signal, the waits between retries, and calls to
 * the server retried while it is away or busy. A refused token, or an answer listen cannot use,
 * ends the run with a ListenFatalError; Ctrl-C ends it with Stopped, which the run loop swallows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelayMs } from '../shared/backoff.ts';
import { MAX_RETRY_AFTER_MS } from '../shared/retry-after.ts';
import type { ListenPrinter } from './listen-output.ts';
import { ServerAnswerError, ServerBusyError, ServerRefusedError, ServerUnreachableError } from './server-client.ts';
import { InternalError } from '../errors/internal-error.ts';

/** A reason listen cannot go on (a refused token, an unknown provider): exit 1 with the message. */
export class ListenFatalError extends InternalError {
  readonly code = 'SB_ERR_LISTEN_FATAL';
}

/** Ctrl-C or SIGTERM: unwinds the run to its summary. */
export class Stopped extends Error {}

/**
 * Retries of server calls, reconnects and local deliveries. Half fixed, half jitter: never a hot
 * loop, and many listeners do not retry in step.
 */
export const LISTEN_BACKOFF = { initialMs: 500, maxMs: 30_000, jitter: 'half' } as const;

export interface RunControl {
  readonly signal: AbortSignal;
  /** The server URL as the user gave it, for messages. */
  readonly server: string;
  stopIfAsked(): void;
  /** Waits (at most MAX_RETRY_AFTER_MS), or throws Stopped as soon as listen is asked to stop. */
  pause(ms: number): Promise<void>;
  /** The backoff before retry `attempt` (1-based), capped at the backoff's maximum. */
  delayFor(attempt: number): number;
  /** A server call, retried while the server is away or busy; a refused token ends listen. */
  fromServer<T>(what: string, call: () => Promise<T>): Promise<T>;
}

export function createRunControl(options: { server: string; printer: ListenPrinter; signal: AbortSignal }): RunControl {
  const { signal, printer } = options;
  const stopIfAsked = (): void => {
    if (signal.aborted) throw new Stopped();
  };
  const delayFor = (attempt: number): number => backoffDelayMs(LISTEN_BACKOFF, attempt);
  const pause = async (ms: number): Promise<void> => {
    try {
      // No wait is longer than the contract's cap: a longer one would overflow the timer and fire at once.
      await sleep(Math.min(ms, MAX_RETRY_AFTER_MS), undefined, { signal });
    } catch {
      throw new Stopped();
    }
  };
  return {
    signal,
    server: options.server,
    stopIfAsked,
    pause,
    delayFor,
    async fromServer<T>(what: string, call: () => Promise<T>): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        stopIfAsked();
        try {
          return await call();
        } catch (err: unknown) {
          stopIfAsked();
          if (err instanceof ServerRefusedError) throw new ListenFatalError(`${options.server}: ${err.message}`);
          let delay: number;
          if (err instanceof ServerBusyError) delay = err.retryAfterMs ?? delayFor(attempt);
          else if (err instanceof ServerUnreachableError) delay = delayFor(attempt);
          else if (err instanceof ServerAnswerError && err.status >= 500) delay = delayFor(attempt);
          else throw err;
          printer.print({ type: 'retry', what, error: err.message, attempt, delay_ms: delay });
          await pause(delay);
        }
      }
    },
  };
}
