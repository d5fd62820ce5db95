import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request, type Dispatcher } from 'undici';
import { checkTarget } from '../../../src/outbound/target-policy/resolve-target.ts';
import {
  createGuardedDispatcher,
  type ConnectAttempt,
} from '../../../src/outbound/target-policy/guarded-dispatcher.ts';
import { createTargetPolicy } from '../../../src/outbound/target-policy/target-policy.ts';
import { parseTarget } from '../../../src/outbound/target-policy/target-url.ts';
import {
  expectRefused,
  forbiddenResolver,
  prepareDelivery,
  refusingConnector,
  scriptedResolver,
  standInConnector,
  startServer,
  type TestServer,
} from './test-helpers.ts';

/*
 * Every request here goes through an injected connector: refusingConnector opens nothing, and
 * standInConnector always opens 127.0.0.1 whatever the guard approved. So a guard bug shows up as
 * a failed assertion, never as a packet to 10.0.0.5 or 169.254.169.254.
 */

let standIn: TestServer;
const dispatchers: Dispatcher[] = [];

beforeAll(async () => {
  standIn = await startServer('127.0.0.1', (_req, res) => res.end('stand-in'));
});
afterAll(async () => {
  await standIn.close();
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
});

const track = <T extends Dispatcher>(d: T): T => {
  dispatchers.push(d);
  return d;
};

/** A guarded dispatcher that may send to `allow` besides loopback, closed after the test. */
const guarded = (allow: string[], options: Omit<Parameters<typeof createGuardedDispatcher>[0], 'policy'>) =>
  track(createGuardedDispatcher({ policy: createTargetPolicy({ allow }), ...options }));

describe('refused targets open no connection', () => {
  const METADATA = /169\.254\.169\.254 is a link-local\/metadata/;
  // name, URL, outbound.allow, what DNS answers, the refusal
  const rows: [name: string, url: string, allow: string[], dns: string[], message: RegExp][] = [
    [
      'metadata IP',
      'http://169.254.169.254/latest/meta-data/',
      [],
      [],
      /169\.254\.169\.254 is a link-local\/metadata address/,
    ],
    ['mapped IPv6 metadata', 'http://[::ffff:169.254.169.254]/', [], [], METADATA],
    ['decimal metadata', 'http://2852039166/', [], [], METADATA],
    ['octal metadata', 'http://0251.0376.0251.0376/', [], [], METADATA],
    ['hex metadata', 'http://0xa9fea9fe/', [], [], METADATA],
    ['dotted hex metadata', 'http://0xa9.0xfe.0xa9.0xfe/', [], [], METADATA],
    ['IPv6 link-local', 'http://[fe80::1]/', ['::/0'], [], /fe80::1 is a link-local\/metadata/],
    ['AWS IPv6 metadata', 'http://[fd00:ec2::254]/', ['fd00::/8'], [], /fd00:ec2::254 is a link-local\/metadata/],
    [
      'private IP not on allow',
      'http://10.0.0.5:8080/hook',
      [],
      [],
      /10\.0\.0\.5 is not on outbound\.allow \(loopback only by default\)/,
    ],
    [
      'name resolving to metadata, name on allow',
      'http://metadata.test/',
      ['metadata.test'],
      ['169.254.169.254'],
      /metadata\.test resolves to 169\.254\.169\.254, a link-local\/metadata address/,
    ],
    [
      'name resolving to loopback and metadata',
      'http://mixed.test/',
      [],
      ['127.0.0.1', '169.254.169.254'],
      /mixed\.test resolves to 169\.254\.169\.254/,
    ],
    [
      'name resolving to private IP',
      'http://db.test/',
      [],
      ['10.0.0.5'],
      /db\.test resolves to 10\.0\.0\.5, and neither is on outbound\.allow/,
    ],
  ];
  const cases = rows.map(([name, url, allow, dns, message]) => ({ name, url, allow, dns, message }));

  it.each(cases)('$name: the guarded dispatcher refuses before connecting', async ({ url, allow, dns, message }) => {
    const connector = refusingConnector();
    const attempts: ConnectAttempt[] = [];
    const dispatcher = guarded(allow, {
      resolver: scriptedResolver(dns).resolver,
      connect: connector.connect,
      onConnect: (a) => attempts.push(a),
    });
    await expectRefused(request(url, { dispatcher, method: 'POST', body: '{}' }), message);
    expect(connector.attempts).toEqual([]);
    expect(attempts).toEqual([]);
  });

  it.each(cases)('$name: prepareDelivery refuses up front', async ({ url, allow, dns, message }) => {
    const connector = refusingConnector();
    await expectRefused(
      prepareDelivery(url, {
        policy: createTargetPolicy({ allow }),
        resolver: scriptedResolver(dns).resolver,
        connect: connector.connect,
      }),
      message,
    );
    expect(connector.attempts).toEqual([]);
  });

  it.each([
    ['file:///etc/passwd', /scheme file: is not http or https/],
    ['gopher://127.0.0.1:6379/_FLUSHALL', /scheme gopher: is not http or https/],
    ['http://user:pass@127.0.0.1:3000/', /carries credentials/],
    ['http://[::1/', /malformed/],
    ['not a url', /malformed/],
  ])('%s is refused without DNS or a connection', async (url, message) => {
    const dns = forbiddenResolver();
    const connector = refusingConnector();
    await expectRefused(
      prepareDelivery(url, {
        policy: createTargetPolicy({ allow: [] }),
        resolver: dns.resolver,
        connect: connector.connect,
      }),
      message,
    );
    expect(dns.calls).toEqual([]);
    expect(connector.attempts).toEqual([]);
  });

  it('an empty target: bad_target, and neither the resolver nor a connector is touched', async () => {
    const dns = forbiddenResolver();
    const connector = refusingConnector();
    await expectRefused(
      prepareDelivery('', {
        policy: createTargetPolicy({ allow: [] }),
        resolver: dns.resolver,
        connect: connector.connect,
      }),
      /^the URL is malformed$/,
      'bad_target',
    );
    expect(dns.calls).toEqual([]);
    expect(connector.attempts).toEqual([]);
  });
});

describe('resolution failures', () => {
  it('a name that does not resolve is a failure (could_not_resolve), with no connection', async () => {
    const connector = refusingConnector();
    const dispatcher = guarded([], {
      resolver: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
      },
      connect: connector.connect,
    });
    await expect(request('http://nowhere.test/', { dispatcher })).rejects.toMatchObject({
      code: 'failed',
      reason: 'could_not_resolve',
      detail: 'nowhere.test could not be resolved (ENOTFOUND)',
    });
    await expect(
      prepareDelivery('http://empty.test/', {
        policy: createTargetPolicy({ allow: [] }),
        resolver: scriptedResolver([]).resolver,
      }),
    ).rejects.toMatchObject({ code: 'failed', reason: 'could_not_resolve', detail: /no addresses/ });
    expect(connector.attempts).toEqual([]);
  });
});

describe('allowed targets connect to the checked address', () => {
  it('10.0.0.5 is reached (through the stand-in) once 10.0.0.0/8 is on outbound.allow', async () => {
    const connector = standInConnector(standIn.port);
    const dispatcher = guarded(['10.0.0.0/8'], {
      resolver: forbiddenResolver().resolver,
      connect: connector.connect,
    });
    const res = await request('http://10.0.0.5:8080/hook', { dispatcher, method: 'POST', body: '{}' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('stand-in');
    expect(connector.attempts.map((a) => [a.hostname, a.port])).toEqual([['10.0.0.5', '8080']]);
  });

  it('the same through prepareDelivery, with the audit record', async () => {
    const connector = standInConnector(standIn.port);
    const attempts: ConnectAttempt[] = [];
    const { target, dispatcher } = await prepareDelivery('http://consumer.test:8080/hook?x=1', {
      policy: createTargetPolicy({ allow: ['10.0.0.0/8'] }),
      resolver: scriptedResolver(['10.0.0.5']).resolver,
      connect: connector.connect,
      onConnect: (a) => attempts.push(a),
    });
    track(dispatcher);
    expect(target).toMatchObject({
      url: 'http://consumer.test:8080/hook?x=1',
      hostname: 'consumer.test',
      port: 8080,
      resolvedIp: '10.0.0.5',
      family: 4,
    });

    const res = await request(target.url, { dispatcher, method: 'POST', body: '{}' });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(attempts).toEqual([
      {
        hostname: 'consumer.test',
        address: '10.0.0.5',
        family: 4,
        port: 8080,
        protocol: 'http:',
        servername: undefined,
      },
    ]);
    // The Host header still names the consumer, not the IP.
    expect(standIn.requests.at(-1)?.host).toBe('consumer.test:8080');
  });

  it('metadata allowed by IP works; the same address allowed by host name does not', async () => {
    const byIp = standInConnector(standIn.port);
    const ok = guarded(['169.254.169.254'], {
      resolver: forbiddenResolver().resolver,
      connect: byIp.connect,
    });
    const res = await request('http://169.254.169.254/latest/meta-data/', { dispatcher: ok });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(byIp.attempts.map((a) => a.hostname)).toEqual(['169.254.169.254']);

    const byName = refusingConnector();
    const refused = guarded(['metadata.test'], {
      resolver: scriptedResolver(['169.254.169.254']).resolver,
      connect: byName.connect,
    });
    await expectRefused(
      request('http://metadata.test/latest/meta-data/', { dispatcher: refused }),
      /metadata\.test resolves to 169\.254\.169\.254, a link-local\/metadata/,
    );
    expect(byName.attempts).toEqual([]);
  });

  it('https keeps the original host name as SNI while connecting to the checked IP', async () => {
    const connector = refusingConnector();
    const attempts: ConnectAttempt[] = [];
    const dispatcher = guarded(['10.0.0.0/8'], {
      resolver: scriptedResolver(['10.0.0.7']).resolver,
      connect: connector.connect,
      onConnect: (a) => attempts.push(a),
    });
    await expect(request('https://secure.test/hook', { dispatcher })).rejects.toThrow(/no socket is opened/);
    expect(connector.attempts).toMatchObject([{ hostname: '10.0.0.7', servername: 'secure.test', protocol: 'https:' }]);
    expect(attempts).toMatchObject([{ port: 443, servername: 'secure.test' }]);
  });

  it('falls back to the next checked address only when nothing listens at the first', async () => {
    const tried: string[] = [];
    const dispatcher = guarded([], {
      resolver: scriptedResolver(['::1', '127.0.0.1']).resolver,
      connect: (opts, callback) => {
        tried.push(opts.hostname);
        if (opts.hostname === '::1') {
          callback(Object.assign(new Error('connect ECONNREFUSED ::1'), { code: 'ECONNREFUSED' }), null);
          return;
        }
        standInConnector(standIn.port).connect(opts, callback);
      },
    });
    const res = await request('http://dual.test:3000/', { dispatcher });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(tried).toEqual(['::1', '127.0.0.1']);
  });
});

describe('DNS rebinding', () => {
  it('unpinned: each connection resolves once and goes to the address that lookup approved', async () => {
    const dns = scriptedResolver(['10.0.0.5'], ['169.254.169.254']);
    const connector = standInConnector(standIn.port);
    const dispatcher = guarded(['10.0.0.0/8', 'rebind.test'], {
      resolver: dns.resolver,
      connect: connector.connect,
    });

    // reset: true closes the socket after the response, forcing a fresh connection next time.
    const first = await request('http://rebind.test:8080/a', { dispatcher, reset: true });
    await first.body.dump();
    expect(first.statusCode).toBe(200);

    await expectRefused(
      request('http://rebind.test:8080/b', { dispatcher, reset: true }),
      /rebind\.test resolves to 169\.254\.169\.254, a link-local\/metadata/,
    );
    expect(dns.calls).toEqual(['rebind.test', 'rebind.test']);
    expect(connector.attempts.map((a) => a.hostname)).toEqual(['10.0.0.5']);
  });

  it('pinned: the second lookup never happens; every connection goes to the first-checked address', async () => {
    const dns = scriptedResolver(['10.0.0.5'], ['169.254.169.254']);
    const connector = standInConnector(standIn.port);
    const { target, dispatcher } = await prepareDelivery('http://rebind.test:8080/a', {
      policy: createTargetPolicy({ allow: ['10.0.0.0/8'] }),
      resolver: dns.resolver,
      connect: connector.connect,
    });
    track(dispatcher);
    for (let i = 0; i < 3; i += 1) {
      const res = await request(target.url, { dispatcher, reset: true });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    }
    expect(dns.calls).toEqual(['rebind.test']);
    expect(connector.attempts.map((a) => a.hostname)).toEqual(['10.0.0.5', '10.0.0.5', '10.0.0.5']);
  });

  it('pinned: refuses any other origin, so nothing else is reachable through it', async () => {
    const connector = refusingConnector();
    const { dispatcher } = await prepareDelivery('http://127.0.0.1:3000/a', {
      policy: createTargetPolicy({ allow: ['10.0.0.0/8'] }),
      resolver: forbiddenResolver().resolver,
      connect: connector.connect,
    });
    track(dispatcher);
    await expectRefused(
      request('http://10.0.0.5:3000/a', { dispatcher }),
      /is not the checked target http:\/\/127\.0\.0\.1:3000/,
    );
    await expectRefused(request('http://127.0.0.1:3001/a', { dispatcher }), /is not the checked target/);
    expect(connector.attempts).toEqual([]);
  });

  it('a hand-made pin for a blocked address is refused at connect time', async () => {
    const connector = refusingConnector();
    const pinned = await checkTarget(parseTarget('http://127.0.0.1:3000/'), {
      policy: createTargetPolicy({ allow: [] }),
    });
    const forged = {
      ...pinned,
      resolvedIp: '169.254.169.254',
      addresses: [{ address: '169.254.169.254', family: 4 as const }],
    };
    const dispatcher = guarded([], {
      pinned: forged,
      connect: connector.connect,
    });
    await expectRefused(request(forged.url, { dispatcher }), /link-local\/metadata/);
    expect(connector.attempts).toEqual([]);
  });
});

describe('loops back into switchboard', () => {
  const self = [{ host: '127.0.0.1', port: 8080 }];
  const policy = createTargetPolicy({ allow: [] });

  it.each([
    'http://127.0.0.1:8080/hooks/github',
    'http://127.0.0.1:8080/mcp',
    'http://127.0.0.1:8080/mcp/',
    'http://127.0.0.1:8080/mcp?x=1',
    'http://127.0.0.1:8080/MCP',
    'http://127.0.0.1:8080/%68ooks/stripe',
    'http://127.0.0.1:8080//hooks/stripe',
    'http://127.0.0.1:8080/a/../hooks/x',
    'http://localhost:8080/hooks/github',
    'http://[::1]:8080/hooks/github',
    'http://127.0.0.2:8080/mcp',
    'http://2130706433:8080/mcp',
    'http://self.test:8080/hooks/x',
  ])('%s is refused', async (url) => {
    const connector = refusingConnector();
    await expectRefused(
      prepareDelivery(url, {
        policy,
        selfAddresses: self,
        resolver: scriptedResolver(['127.0.0.1']).resolver,
        connect: connector.connect,
      }),
      /would loop back into switchboard/,
    );
    expect(connector.attempts).toEqual([]);
  });

  it.each([
    'http://127.0.0.1:8081/hooks/github',
    'http://127.0.0.1:8080/consumer',
    'http://127.0.0.1:8080/mcpx',
    'http://127.0.0.1:8080/api/events',
  ])('%s is not a loop', async (url) => {
    const { dispatcher } = await prepareDelivery(url, {
      policy,
      selfAddresses: self,
      resolver: forbiddenResolver().resolver,
      connect: refusingConnector().connect,
    });
    track(dispatcher);
  });

  it('a 0.0.0.0 listener makes every loopback alias on its port "self"', async () => {
    await expectRefused(
      prepareDelivery('http://127.0.0.9:9000/hooks/x', {
        policy,
        selfAddresses: [{ host: '0.0.0.0', port: 9000 }],
        connect: refusingConnector().connect,
      }),
      /would loop back/,
    );
  });

  it('a pinned dispatcher refuses a loop path even on an approved origin', async () => {
    const connector = refusingConnector();
    const { target, dispatcher } = await prepareDelivery('http://127.0.0.1:8080/consumer', {
      policy,
      selfAddresses: self,
      connect: connector.connect,
    });
    track(dispatcher);
    await expectRefused(
      request(new URL('/hooks/github', target.url), { dispatcher, method: 'POST', body: '{}' }),
      /would loop back into switchboard/,
    );
    expect(connector.attempts).toEqual([]);
  });
});
