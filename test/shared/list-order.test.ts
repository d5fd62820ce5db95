import { describe, expect, it } from 'vitest';
import { isBefore } from '../../src/shared/list-order.ts';

const at = (received_at: string, id = '01900000-0000-7000-8000-000000000001') => ({ received_at, id });

describe('isBefore: the event list order, received_at then id', () => {
  it('orders by the instant first, whatever form the time is written in', () => {
    expect(isBefore(at('2025-01-31T12:00:00.000001Z'), at('2025-01-31T12:00:01.000000Z'))).toBe(true);
    expect(isBefore(at('2025-01-31T13:00:00.5+01:00'), at('2025-01-31T12:00:00.600000Z'))).toBe(true);
    expect(isBefore(at('2025-01-31T12:00:01.000000Z'), at('2025-01-31T12:00:00.999999Z'))).toBe(false);
  });

  it('orders the microseconds of one millisecond, then the id', () => {
    expect(isBefore(at('2025-01-31T12:00:00.123455Z'), at('2025-01-31T12:00:00.123456Z'))).toBe(true);
    const same = '2025-01-31T12:00:00.123456Z';
    const low = at(same, '01900000-0000-7000-8000-000000000001');
    const high = at(same, '01900000-0000-7000-8000-000000000002');
    expect(isBefore(low, high)).toBe(true);
    expect(isBefore(high, low)).toBe(false);
    expect(isBefore(low, low)).toBe(false);
  });
});
