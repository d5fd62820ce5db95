import type { ApiEventSummary } from '../../../generated/types.ts';
import { createParser } from 'eventsource-parser';
import { backoffDelayMs } from '../../shared/backoff.ts';

export type LiveState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'offline'; retryAt: number; reason: string }
  | { kind: 'stopped' };

export interface LiveStreamHandlers {
  onEvent(summary: ApiEventSummary): void;
  /** The server could not replay what was missed: reload the list. */
  onReset(reason: string): void;
  /** Called on every successful (re)connect; resumed tells whether Last-Event-ID was sent. */
  onOpen(resumed: boolean): void;
  onState(state: LiveState): void;
  onUnauthorized(): void;
}

// The server sends a heartbeat every 15 s: three missed ones mean a dead connection nobody closed.
const SILENCE_LIMIT_MS = 45_000;
// One stream message is a summary of a few KiB: past this the stream is dropped and resumed.
const MAX_MESSAGE_CHARS = 1024 * 1024;
const MAX_BACKOFF_MS = 15_000;

/**
 * Reads /api/stream with fetch (EventSource cannot send the bearer header) and reconnects with
 * Last-Event-ID, so the server replays whatever arrived in between: no gap, no duplicate.
 */
export class LiveStream {
  private abort: AbortController | undefined;
  private lastId: string | undefined;
  private stopped = false;
  private failures = 0;
  private retryMs = 2000;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly authHeader: string,
    private readonly handlers: LiveStreamHandlers,
  ) {}

  /** Starts streaming; events after `since` (an event id) are replayed first. */
  start(since: string | undefined): void {
    this.lastId = since;
    this.stopped = false;
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort?.abort();
    this.handlers.onState({ kind: 'stopped' });
  }

  /** Reconnect now instead of waiting out the backoff (e.g. the user clicked "retry"). */
  retryNow(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.abort?.abort();
    void this.connect();
  }

  private schedule(reason: string): void {
    if (this.stopped) return;
    this.failures++;
    // The server's retry hint doubled per failure, without jitter: one tab reconnecting is no herd.
    const delay = backoffDelayMs({ initialMs: this.retryMs, maxMs: MAX_BACKOFF_MS, jitter: 'none' }, this.failures);
    this.handlers.onState({ kind: 'offline', retryAt: Date.now() + delay, reason });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), delay);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const abort = new AbortController();
    this.abort = abort;
    this.handlers.onState({ kind: 'connecting' });
    const headers: Record<string, string> = { Authorization: this.authHeader, Accept: 'text/event-stream' };
    const resumed = this.lastId !== undefined;
    if (this.lastId !== undefined) headers['Last-Event-ID'] = this.lastId;
    let silence: ReturnType<typeof setTimeout> | undefined;
    const feedWatchdog = (): void => {
      clearTimeout(silence);
      silence = setTimeout(() => abort.abort(), SILENCE_LIMIT_MS);
    };
    try {
      const response = await fetch('/api/stream', {
        headers,
        cache: 'no-store',
        credentials: 'omit',
        signal: abort.signal,
      });
      if (response.status === 401) {
        this.stopped = true;
        this.handlers.onUnauthorized();
        return;
      }
      if (!response.ok || !response.body) {
        this.schedule(`server answered ${response.status}`);
        return;
      }
      this.failures = 0;
      this.handlers.onState({ kind: 'live' });
      this.handlers.onOpen(resumed);
      feedWatchdog();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = createParser({
        maxBufferSize: MAX_MESSAGE_CHARS,
        onRetry: (ms) => (this.retryMs = ms),
        onEvent: (message) => this.dispatch(message.event ?? 'message', message.data, message.id ?? ''),
        onError: (error) => {
          if (error.type === 'max-buffer-size-exceeded') throw error;
        },
      });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        feedWatchdog();
        parser.feed(value);
      }
      clearTimeout(silence);
      this.schedule('the server closed the stream');
    } catch (err) {
      clearTimeout(silence);
      if (this.stopped || (abort.signal.aborted && this.abort !== abort)) return;
      this.schedule(err instanceof Error ? err.message : 'connection failed');
    }
  }

  private dispatch(event: string, data: string, id: string): void {
    if (event === 'event') {
      try {
        const summary = JSON.parse(data) as ApiEventSummary;
        if (id) this.lastId = id;
        this.handlers.onEvent(summary);
      } catch {
        // A message that does not parse is skipped; the next one still counts.
      }
    } else if (event === 'reset') {
      let reason = 'the server asked for a reload';
      try {
        reason = (JSON.parse(data) as { reason?: string }).reason ?? reason;
      } catch {
        // keep the default reason
      }
      this.lastId = undefined;
      this.handlers.onReset(reason);
    }
  }

  /** Remember the newest id the page knows, so the next reconnect resumes from it. */
  noteNewest(id: string | undefined): void {
    if (id !== undefined && (this.lastId === undefined || id > this.lastId)) this.lastId = id;
  }
}
