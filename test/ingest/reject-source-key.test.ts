import { describe, expect, it } from 'vitest';
import { rejectSourceKey } from '../../src/ingest/reject-source-key.ts';

describe('rejectSourceKey (26.11)', () => {
  it('is the IPv4 address itself, and the IPv4 address an IPv4-mapped IPv6 names', () => {
    expect(rejectSourceKey('127.0.0.7')).toBe('127.0.0.7');
    expect(rejectSourceKey('::ffff:127.0.0.7')).toBe('127.0.0.7');
    expect(rejectSourceKey('::ffff:7f00:7')).toBe('127.0.0.7');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    const key = '2001:db8:1:2::/64';
    for (const ip of [
      '2001:db8:1:2::1',
      '2001:0DB8:0001:0002:aaaa:bbbb:cccc:dddd',
      '2001:db8:1:2:0:0:1.2.3.4',
      'fe80::1%eth0',
    ]) {
      expect(rejectSourceKey(ip)).toBe(ip.startsWith('fe80') ? 'fe80:0:0:0::/64' : key);
    }
    expect(rejectSourceKey('::1')).toBe('0:0:0:0::/64');
    expect(rejectSourceKey(null)).toBe('unknown');
  });
});
