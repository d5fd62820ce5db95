import { describe, expect, it, vi } from 'vitest';
import { createCoalescingNotifier } from '../../src/mcp/coalescing-notifier.ts';

describe('coalescing notifier', () => {
  it('sends at once when idle, then at most once per interval, and never drops the last change', () => {
    vi.useFakeTimers();
    try {
      let t = 0;
      const sent: number[] = [];
      const notifier = createCoalescingNotifier(
        () => sent.push(t),
        250,
        () => t,
      );
      const advance = (ms: number): void => {
        t += ms;
        vi.advanceTimersByTime(ms);
      };
      notifier.trigger();
      expect(sent).toEqual([0]);
      for (let i = 0; i < 10; i += 1) {
        advance(20);
        notifier.trigger();
      }
      expect(sent).toEqual([0]);
      advance(50);
      expect(sent).toEqual([0, 250]);
      advance(1_000);
      expect(sent).toEqual([0, 250]);
      notifier.trigger();
      expect(sent).toEqual([0, 250, 1250]);
      notifier.trigger();
      notifier.cancel();
      advance(1_000);
      expect(sent).toEqual([0, 250, 1250]);
    } finally {
      vi.useRealTimers();
    }
  });
});
