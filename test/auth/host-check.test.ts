import { describe, expect, it } from 'vitest';
import { createHostMatcher, parseAuthority } from '../../src/auth/host-check.ts';

const at = (localAddress: string, localPort: number) => ({ localAddress, localPort });

function allows(
  matcher: ReturnType<typeof createHostMatcher>,
  authority: string,
  connection = at('127.0.0.1', 8080),
): boolean {
  const parsed = parseAuthority(authority);
  return parsed !== undefined && matcher.allows(parsed, connection);
}

describe('host check', () => {
  it('parses Host headers: names, IPv4, bracketed IPv6, IPv4-mapped IPv6, trailing dots, ports', () => {
    expect(parseAuthority('LocalHost:8080')).toEqual({ host: 'localhost', port: 8080 });
    expect(parseAuthority('[::1]:80')).toEqual({ host: '[::1]', port: 80 });
    expect(parseAuthority('[::FFFF:127.0.0.1]:9')).toEqual({ host: '127.0.0.1', port: 9 });
    expect(parseAuthority('example.com.')).toEqual({ host: 'example.com', port: undefined });
    for (const bad of ['', 'a b', 'host:99999', 'user@host', 'host:port', '::1', 'http://x', 'host:80:80']) {
      expect(parseAuthority(bad), bad).toBeUndefined();
    }
  });

  it('bound to 127.0.0.1: the loopback names on the connection port, nothing else', () => {
    const matcher = createHostMatcher({ bindHost: '127.0.0.1' });
    for (const ok of ['127.0.0.1:8080', 'localhost:8080', '[::1]:8080']) expect(allows(matcher, ok), ok).toBe(true);
    for (const no of [
      '127.0.0.1:8081',
      'localhost',
      '127.0.0.2:8080',
      'evil.com:8080',
      '192.168.1.5:8080',
      'localhost.evil.com:8080',
    ]) {
      expect(allows(matcher, no), no).toBe(false);
    }
    // Host without a port means 80.
    expect(allows(createHostMatcher({ bindHost: 'localhost' }), 'localhost', at('127.0.0.1', 80))).toBe(true);
    expect(allows(createHostMatcher({ bindHost: '::1' }), '[::1]:8080', at('::1', 8080))).toBe(true);
  });

  it('bound to 0.0.0.0: loopback names plus the local address the connection arrived at', () => {
    const matcher = createHostMatcher({ bindHost: '0.0.0.0' });
    expect(allows(matcher, '192.168.1.5:8080', at('192.168.1.5', 8080))).toBe(true);
    expect(allows(matcher, '192.168.1.5:8080', at('::ffff:192.168.1.5', 8080))).toBe(true);
    expect(allows(matcher, 'localhost:8080', at('192.168.1.5', 8080))).toBe(true);
    expect(allows(matcher, '192.168.1.6:8080', at('192.168.1.5', 8080))).toBe(false);
    expect(allows(matcher, 'myhost.lan:8080', at('192.168.1.5', 8080))).toBe(false);
    const v6 = createHostMatcher({ bindHost: '::' });
    expect(allows(v6, '[fd00::5]:8080', at('fd00::5', 8080))).toBe(true);
  });

  it('bound to a specific address or name: only that one', () => {
    const matcher = createHostMatcher({ bindHost: '10.0.0.7' });
    expect(allows(matcher, '10.0.0.7:8080', at('10.0.0.7', 8080))).toBe(true);
    expect(allows(matcher, 'localhost:8080', at('10.0.0.7', 8080))).toBe(false);
  });

  it('adds server.allowed_hosts: a bare name on any port, name:port on that port only', () => {
    const matcher = createHostMatcher({
      bindHost: '127.0.0.1',
      allowedHosts: ['Switchboard.Example', 'proxy.example:8443', '[fd00::1]'],
    });
    expect(allows(matcher, 'switchboard.example')).toBe(true);
    expect(allows(matcher, 'switchboard.example:9999')).toBe(true);
    expect(allows(matcher, 'proxy.example:8443')).toBe(true);
    expect(allows(matcher, 'proxy.example:8080')).toBe(false);
    expect(allows(matcher, 'proxy.example')).toBe(false);
    expect(allows(matcher, '[fd00::1]:1')).toBe(true);
    expect(() => createHostMatcher({ bindHost: '127.0.0.1', allowedHosts: ['http://x.example/'] })).toThrow(
      /allowed_hosts/,
    );
  });
});
