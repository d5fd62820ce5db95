import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { DeliveryFailure } from '../../../src/outbound/delivery-failure.ts';
import { checkTarget } from '../../../src/outbound/target-policy/resolve-target.ts';
import { createTargetPolicy } from '../../../src/outbound/target-policy/target-policy.ts';
import { parseTarget } from '../../../src/outbound/target-policy/target-url.ts';
import { expectRefused, forbiddenResolver } from './test-helpers.ts';

const defaults = createTargetPolicy({ allow: [] });

describe('default policy: loopback only', () => {
  it.each(['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '[::1]', '2130706433'])('allows %s', (ip) => {
    expect(defaults.check(ip, ip).allowed).toBe(true);
  });

  it('allows localhost because it resolves to loopback, not because of its name', () => {
    expect(defaults.check('localhost', '127.0.0.1').allowed).toBe(true);
    expect(defaults.check('localhost', '10.0.0.5')).toMatchObject({ allowed: false, rule: 'not-allowed' });
  });

  it.each(['10.0.0.5', '192.168.1.10', '172.16.0.1', '0.0.0.0', '::', '8.8.8.8', '2001:db8::1', '100.100.100.200'])(
    'refuses %s',
    (ip) => {
      expect(defaults.check(ip, ip)).toMatchObject({ allowed: false, rule: 'not-allowed' });
    },
  );

  it('names the rule in the refusal', () => {
    expect(() => defaults.assertAllowed('10.0.0.5', '10.0.0.5')).toThrow(
      '10.0.0.5 is not on outbound.allow (loopback only by default)',
    );
    expect(() => defaults.assertAllowed('db.internal', '10.0.0.5')).toThrow(
      'db.internal resolves to 10.0.0.5, and neither is on outbound.allow (loopback only by default)',
    );
    expect(() => defaults.assertAllowed('169.254.169.254', '169.254.169.254')).toThrow(
      /^169\.254\.169\.254 is a link-local\/metadata address/,
    );
  });

  it('throws a refusal: a DeliveryFailure, refused, target_not_allowed', () => {
    let caught: unknown;
    try {
      defaults.assertAllowed('10.0.0.5', '10.0.0.5');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DeliveryFailure);
    expect(caught).toMatchObject({ code: 'refused', reason: 'target_not_allowed' });
  });

  it('refuses a resolver answer that is not an IP address', () => {
    expect(defaults.check('weird.example', 'not-an-ip')).toMatchObject({ allowed: false, rule: 'not-an-ip' });
  });
});

describe('outbound.allow', () => {
  it('extends with IPv4 and IPv6 CIDRs and single IPs', () => {
    const policy = createTargetPolicy({ allow: ['10.0.0.0/8', '2001:db8::/32', '192.168.1.10', '[2001:db9::7]'] });
    const allowed = (ip: string) => policy.check(ip, ip).allowed;
    const inside = ['10.0.0.5', '2001:db8::5', '192.168.1.10', '2001:db9::7', '127.0.0.1'];
    expect(inside.map(allowed)).toEqual(inside.map(() => true));
    expect(['11.0.0.1', '192.168.1.11'].map(allowed)).toEqual([false, false]);
  });

  it('extends with host names, matched after normalisation, deciding on whatever they resolve to', () => {
    const policy = createTargetPolicy({ allow: ['API.internal.'] });
    const at = (host: string) => policy.check(host, '10.1.2.3').allowed;
    expect(['api.internal', 'Api.Internal.', 'other.internal', '10.1.2.3'].map(at)).toEqual([true, true, false, false]);
  });

  it('accepts numeric IPv4 spellings in config as the IP they mean', () => {
    const policy = createTargetPolicy({ allow: ['0x0a000005'] });
    expect(policy.check('10.0.0.5', '10.0.0.5').allowed).toBe(true);
  });

  it.each(['not a host!', '10.0.0.0/33', '*.example.com', 'http://example.com', 'example.com/24', '::ffff:0:0/80'])(
    'rejects the config entry %j',
    async (entry) => {
      expect(() => createTargetPolicy({ allow: [entry] })).toThrow(ConfigError);
      expect(() => createTargetPolicy({ allow: [entry] })).toThrow(
        /^outbound\.allow: entry .* is not a host name, IP address or CIDR$/,
      );
    },
  );

  it('allowLoopbackDefault: false leaves only what is listed', () => {
    const policy = createTargetPolicy({ allow: ['127.0.0.1'], allowLoopbackDefault: false });
    expect(policy.check('127.0.0.1', '127.0.0.1').allowed).toBe(true);
    expect(policy.check('127.0.0.2', '127.0.0.2')).toMatchObject({
      allowed: false,
      detail: '127.0.0.2 is not on outbound.allow',
    });
    expect(policy.check('::1', '::1').allowed).toBe(false);
  });
});

describe('link-local and metadata addresses', () => {
  const blocked = [
    '169.254.169.254',
    '169.254.170.2',
    '169.254.0.1',
    'fe80::1',
    'febf::1',
    'fd00:ec2::254',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
  ];

  it.each(blocked)('%s is refused even when outbound.allow holds every address and the name', (ip) => {
    const policy = createTargetPolicy({ allow: ['0.0.0.0/0', '::/0', 'fd00::/8', 'metadata.test'] });
    expect(policy.check(ip, ip)).toMatchObject({ allowed: false, rule: 'link-local-metadata' });
    expect(policy.check('metadata.test', ip)).toMatchObject({ allowed: false, rule: 'link-local-metadata' });
  });

  it('a host-name entry does not unlock what the name resolves to', () => {
    const policy = createTargetPolicy({ allow: ['metadata.google.internal'] });
    expect(() => policy.assertAllowed('metadata.google.internal', '169.254.169.254')).toThrow(
      /^metadata\.google\.internal resolves to 169\.254\.169\.254, a link-local\/metadata address/,
    );
  });

  it('an IP or CIDR entry that names them unlocks exactly what it names', () => {
    const single = createTargetPolicy({ allow: ['169.254.169.254'] });
    expect(single.check('169.254.169.254', '169.254.169.254').allowed).toBe(true);
    expect(single.check('169.254.169.253', '169.254.169.253').allowed).toBe(false);

    const range = createTargetPolicy({ allow: ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254'] });
    for (const ip of ['169.254.1.2', 'fe80::1', 'fd00:ec2::254', '::ffff:169.254.169.254']) {
      expect(range.check(ip, ip).allowed, ip).toBe(true);
    }

    const mapped = createTargetPolicy({ allow: ['::ffff:169.254.169.254'] });
    expect(mapped.check('169.254.169.254', '169.254.169.254').allowed).toBe(true);
  });

  it('an unlocking IP entry also covers a name that resolves to it', () => {
    const policy = createTargetPolicy({ allow: ['169.254.169.254'] });
    expect(policy.check('metadata.test', '169.254.169.254').allowed).toBe(true);
  });
});

// --- property: every spelling of every 169.254.0.0/16 address is refused -----------------------

type Radix = 'dec' | 'hex' | 'HEX' | 'oct';

const renderNumber = (n: number, radix: Radix): string => {
  switch (radix) {
    case 'dec':
      return String(n);
    case 'hex':
      return `0x${n.toString(16)}`;
    case 'HEX':
      return `0X${n.toString(16).toUpperCase()}`;
    case 'oct':
      return `0${n.toString(8)}`;
  }
};

/** Splits a 32-bit value into `parts` inet_aton parts: leading bytes, then the remaining bits. */
function renderIpv4(value: number, parts: number, radices: readonly Radix[]): string {
  const bytes = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
  const lead = bytes.slice(0, parts - 1);
  const restBits = 8 * (4 - lead.length);
  const tail = restBits === 32 ? value : value % 2 ** restBits;
  return [...lead, tail].map((n, i) => renderNumber(n, radices[i] ?? 'dec')).join('.');
}

const hex16 = (n: number): string => n.toString(16);

const linkLocalValue = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
  .map(([c, d]) => 169 * 2 ** 24 + 254 * 2 ** 16 + c * 256 + d);

const radix = fc.constantFrom<Radix>('dec', 'hex', 'HEX', 'oct');

const ipv4Spelling = fc
  .record({
    value: linkLocalValue,
    parts: fc.integer({ min: 1, max: 4 }),
    radices: fc.array(radix, { minLength: 4, maxLength: 4 }),
    dot: fc.boolean(),
  })
  .map(({ value, parts, radices, dot }) => ({ host: renderIpv4(value, parts, radices) + (dot ? '.' : ''), value }));

const mappedSpelling = fc
  .record({ value: linkLocalValue, form: fc.constantFrom('dotted', 'hex', 'long', 'upper') })
  .map(({ value, form }) => {
    const dotted = renderIpv4(value, 4, ['dec', 'dec', 'dec', 'dec']);
    const hi = hex16(value >>> 16);
    const lo = hex16(value & 0xffff);
    const host = {
      dotted: `[::ffff:${dotted}]`,
      hex: `[::ffff:${hi}:${lo}]`,
      long: `[0:0:0:0:0:ffff:${hi}:${lo}]`,
      upper: `[::FFFF:${hi.toUpperCase()}:${lo.toUpperCase()}]`,
    }[form];
    return { host: host ?? dotted, value };
  });

const anySpelling = fc.oneof(ipv4Spelling, mappedSpelling);

describe('property: 169.254.0.0/16 in any spelling', () => {
  const wideOpen = createTargetPolicy({ allow: ['0.0.0.0/0', '::/0'] });

  it('is refused by the policy, as given', () => {
    fc.assert(
      fc.property(anySpelling, ({ host }) => {
        const verdict = wideOpen.check(host, host);
        expect(verdict).toMatchObject({ allowed: false, rule: 'link-local-metadata' });
      }),
      { numRuns: 500 },
    );
  });

  it('is refused end to end through the URL layer, without asking DNS', async () => {
    await fc.assert(
      fc.asyncProperty(anySpelling, async ({ host, value }) => {
        const dns = forbiddenResolver();
        const url = parseTarget(`http://${host}/latest/meta-data/`);
        const error = await expectRefused(
          checkTarget(url, { policy: wideOpen, resolver: dns.resolver }),
          /link-local\/metadata address/,
        );
        expect(error.message).toContain(renderIpv4(value, 4, ['dec', 'dec', 'dec', 'dec']));
        expect(dns.calls).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
