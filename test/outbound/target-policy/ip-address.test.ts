import { describe, expect, it } from 'vitest';
import { normaliseHost, normaliseIp, parseCidr } from '../../../src/outbound/target-policy/ip-address.ts';

describe('normaliseHost', () => {
  it.each([
    ['169.254.169.254', '169.254.169.254'],
    ['2852039166', '169.254.169.254'],
    ['0251.0376.0251.0376', '169.254.169.254'],
    ['0xa9fea9fe', '169.254.169.254'],
    ['0XA9FEA9FE', '169.254.169.254'],
    ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254'],
    ['169.254.43518', '169.254.169.254'],
    ['169.16689662', '169.254.169.254'],
    ['169.254.169.254.', '169.254.169.254'],
    ['127.1', '127.0.0.1'],
    ['[::ffff:169.254.169.254]', '169.254.169.254'],
    ['[::ffff:a9fe:a9fe]', '169.254.169.254'],
    ['::ffff:a9fe:a9fe', '169.254.169.254'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', '169.254.169.254'],
    ['[::1]', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['[FE80::1]', 'fe80::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['fd00:ec2:0:0:0:0:0:254', 'fd00:ec2::254'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
  ])('%s is the IP %s', (raw, address) => {
    expect(normaliseHost(raw)).toMatchObject({ kind: 'ip', address });
  });

  it.each([
    ['LocalHost.', 'localhost'],
    ['Example.COM', 'example.com'],
    ['svc_internal.corp', 'svc_internal.corp'],
  ])('%s is the name %s', (raw, name) => {
    expect(normaliseHost(raw)).toEqual({ kind: 'name', name });
  });

  it.each([
    '',
    '08.0.0.1',
    'foo.08',
    'example.123',
    '1.2.3.4.5',
    '256.1.1.1',
    '4294967296',
    'a..b',
    '-bad.example',
    '[::1',
    '::g',
    'exa mple',
  ])('refuses %j', (raw) => {
    expect(normaliseHost(raw)).toBeUndefined();
  });
});

describe('normaliseIp', () => {
  it('does not take host names', () => {
    expect(normaliseIp('localhost')).toBeUndefined();
  });
});

describe('parseCidr', () => {
  it.each([
    ['10.0.0.0/8', { address: '10.0.0.0', family: 4, prefix: 8 }],
    ['10.0.0.5', { address: '10.0.0.5', family: 4, prefix: 32 }],
    ['fe80::/10', { address: 'fe80::', family: 6, prefix: 10 }],
    ['[::1]/128', { address: '::1', family: 6, prefix: 128 }],
    ['::ffff:169.254.0.0/112', { address: '169.254.0.0', family: 4, prefix: 16 }],
  ])('%s', (raw, cidr) => {
    expect(parseCidr(raw)).toEqual(cidr);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/x', 'example.com/24', '::ffff:0:0/80'])(
    'refuses %s',
    (raw) => {
      expect(parseCidr(raw)).toBeUndefined();
    },
  );
});
