/**
 * list_webhook_events with wait_ms: when the page would be empty, the call waits for the live bus
 * to announce a commit and reads again, until a matching event is there or wait_ms is over. The
 * bus says "something committed", not what, so the same query decides what matches: the filters
 * that shape the page are the ones that end the wait. Nothing polls, and nothing holds a database
 * connection between reads: a wait is a timer and a listener.
 *
 * Each caller may have at most maxWaitsPerCaller calls waiting at once; a wait that would pass it
 * is refused before it starts (rate_limited), while a call whose first read finds events never
 * counts as one.
 */
import type { EventBus } from '../bus/event-bus.ts';
import { AppError } from '../errors/app-error.ts';

export interface EventWaitsOptions {
  bus: Pick<EventBus, 'subscribe'>;
  /** ResolvedConfig.mcp.maxWaitsPerCaller. */
  maxWaitsPerCaller: number;
}

interface WaitingRead<Page> {
  /** Token name: the identity the per-caller limit counts by. */
  caller: string;
  /** 0 reads once and answers. */
  waitMs: number;
  /** Ends the wait: the call was cancelled, or its session or token ended (the reason is thrown). */
  signal: AbortSignal;
  read: () => Promise<Page>;
  isEmpty: (page: Page) => boolean;
}

export interface EventWaits {
  /** The first non-empty page, or the last empty one once waitMs is over. */
  readOrWait<Page>(request: WaitingRead<Page>): Promise<Page>;
  /** Calls waiting now, for one caller or all. */
  waiting(caller?: string): number;
  /** Stops listening to the bus (shutdown); waits still pending end at their deadline. */
  close(): void;
}

/** One call's view of the bus: whether a commit was announced since its last read, and who to wake. */
interface Announcements {
  pending: boolean;
  wake: (() => void) | undefined;
}

/** Resolves true when a commit is announced, false at the deadline; rejects with the signal's reason on abort. */
function nextAnnouncement(news: Announcements, deadline: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const remaining = deadline - performance.now();
    if (remaining <= 0) return resolve(false);
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      news.wake = undefined;
      settle();
    };
    const onAbort = (): void => finish(() => reject(signal.reason as Error));
    const timer = setTimeout(() => finish(() => resolve(false)), remaining);
    signal.addEventListener('abort', onAbort, { once: true });
    news.wake = () => finish(() => resolve(true));
  });
}

export function createEventWaits(options: EventWaitsOptions): EventWaits {
  const limit = options.maxWaitsPerCaller;
  const byCaller = new Map<string, number>();
  const listeners = new Set<() => void>();
  const unsubscribe = options.bus.subscribe(() => {
    for (const listener of listeners) listener();
  });

  const reserve = (caller: string): (() => void) => {
    const held = byCaller.get(caller) ?? 0;
    if (held >= limit) {
      throw new AppError(
        'rate_limited',
        `this token already has ${limit} list_webhook_events calls waiting (mcp.max_waits_per_caller); let one return, or call without wait_ms`,
        { retryAfterSeconds: 1 },
      );
    }
    byCaller.set(caller, held + 1);
    return () => {
      const left = (byCaller.get(caller) ?? 1) - 1;
      if (left > 0) byCaller.set(caller, left);
      else byCaller.delete(caller);
    };
  };

  return {
    async readOrWait(request) {
      const news: Announcements = { pending: false, wake: undefined };
      const listener = (): void => {
        news.pending = true;
        news.wake?.();
      };
      // Listening starts before the first read, so a commit during that read is not missed.
      listeners.add(listener);
      // wait_ms counts from the call's start, its first read included.
      const deadline = performance.now() + request.waitMs;
      try {
        let page = await request.read();
        if (!request.isEmpty(page) || performance.now() >= deadline) return page;
        const release = reserve(request.caller);
        try {
          for (;;) {
            if (!news.pending && !(await nextAnnouncement(news, deadline, request.signal))) return page;
            news.pending = false;
            page = await request.read();
            request.signal.throwIfAborted();
            if (!request.isEmpty(page)) return page;
          }
        } finally {
          release();
        }
      } finally {
        listeners.delete(listener);
      }
    },
    waiting(caller) {
      if (caller !== undefined) return byCaller.get(caller) ?? 0;
      let total = 0;
      for (const count of byCaller.values()) total += count;
      return total;
    },
    close() {
      unsubscribe();
    },
  };
}
