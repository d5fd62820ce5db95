import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from '../../src/shared/backoff.ts';

describe('backoff', () => {
  const backoff = { initialMs: 500, maxMs: 30_000 };

  it('doubles the ceiling per failed attempt up to max, and never overflows', () => {
    expect([1, 2, 3, 4, 7, 8, 1000].map((n) => backoffDelayMs({ ...backoff, jitter: 'none' }, n))).toEqual([
      500, 1_000, 2_000, 4_000, 30_000, 30_000, 30_000,
    ]);
    expect(backoffDelayMs({ ...backoff, jitter: 'none' }, 0)).toBe(500);
  });

  it('draws full jitter under the ceiling, and half jitter in its upper half', () => {
    expect(backoffDelayMs(backoff, 4, () => 0)).toBe(0);
    expect(backoffDelayMs(backoff, 4, () => 0.999)).toBe(3_996);
    expect(backoffDelayMs({ ...backoff, jitter: 'half' }, 4, () => 0)).toBe(2_000);
    expect(backoffDelayMs({ ...backoff, jitter: 'half' }, 4, () => 0.999)).toBe(3_998);
  });
});
