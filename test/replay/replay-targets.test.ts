import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectAttempt } from '../../src/outbound/target-policy/guarded-dispatcher.ts';
import { createTargetPolicy } from '../../src/outbound/target-policy/target-policy.ts';
import { freshDatabase, type TestDatabase } from '../support/database.ts';
import {
  forbiddenResolver,
  refusingConnector,
  scriptedResolver,
  standInConnector,
} from '../outbound/target-policy/test-helpers.ts';
import { expectAppError, replayHarness, storeDelivery, type ReplayHarness } from './replay-test-kit.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

/*
 * Target choice and the SSRF policy as the replay service applies them. Everything on the wire is
 * loopback; a non-loopback address is only ever "connected to" through an injected resolver and a
 * connector that opens its socket to a loopback stand-in, so no packet can leave the machine.
 */

const providers = providersFrom({ hooks: { trust_mode: 'open' } });

let db: TestDatabase;
let kit: ReplayHarness;
let consumer: Consumer; // 127.0.0.1: the allowed consumer
let forbidden: Consumer; // 127.0.0.2: outside the pinned policy, must never be connected to
let eventId: string;

beforeAll(async () => {
  db = await freshDatabase();
  kit = replayHarness(db, providers);
  consumer = await startConsumer('127.0.0.1');
  forbidden = await startConsumer('127.0.0.2');
  eventId = await hooksEvent('{"x":1}');
});

afterAll(async () => {
  await kit.close();
  await Promise.all([consumer.close(), forbidden.close()]);
  await db.close();
});

afterEach(() => {
  expect(forbidden.connections, 'the 127.0.0.2 listener must never be connected to').toBe(0);
  consumer.requests.length = 0;
  consumer.handle((_req, res) => res.end('ok'));
});

type ServiceOptions = NonNullable<Parameters<ReplayHarness['service']>[0]>;

/** A service with no default target that may send to `allow`, resolving and connecting as it is told. */
function servicePinnedTo(
  allow: string[],
  resolver: NonNullable<ServiceOptions['resolver']>,
  connector: { connect: NonNullable<ServiceOptions['connect']> },
) {
  return kit.service({
    replay: { defaultTarget: undefined, timeoutMs: 3_000 },
    allow,
    resolver,
    connect: connector.connect,
  });
}

/** An event of the open `hooks` provider, received from `sourceIp` (the kit's default otherwise). */
async function hooksEvent(body: string, sourceIp?: string): Promise<string> {
  const delivery = { rawHeaders: [], body: Buffer.from(body), ...(sourceIp === undefined ? {} : { sourceIp }) };
  return (await storeDelivery(kit.store, webhookProvider(providers, 'hooks'), delivery)).id;
}

/** Records every DNS lookup, connection and socket the service asks for. */
function networkSpy(): {
  resolver: ReturnType<typeof forbiddenResolver>;
  connector: ReturnType<typeof refusingConnector>;
  connects: ConnectAttempt[];
  nothingHappened: () => void;
  /** A service that resolves, connects and approves connections through the spy. */
  service: (overrides?: ServiceOptions) => ReturnType<ReplayHarness['service']>;
} {
  const resolver = forbiddenResolver();
  const connector = refusingConnector();
  const connects: ConnectAttempt[] = [];
  const connectionsBefore = consumer.connections;
  return {
    resolver,
    connector,
    connects,
    nothingHappened: () => {
      expect(resolver.calls, 'DNS lookups').toEqual([]);
      expect(connector.attempts, 'sockets opened').toEqual([]);
      expect(connects, 'connections approved').toEqual([]);
      expect(consumer.connections, 'connections received').toBe(connectionsBefore);
    },
    service: (overrides = {}) =>
      kit.service({
        resolver: resolver.resolver,
        connect: connector.connect,
        onConnect: (a) => connects.push(a),
        ...overrides,
      }),
  };
}

/** Replays the event to `targetUrl` and expects invalid_argument matching `message`, with no DNS lookup, socket or connection. */
async function expectRefusedBeforeAnyRequest(
  targetUrl: string | undefined,
  message: RegExp,
  options: { overrides?: ServiceOptions; caller?: string } = {},
): Promise<void> {
  const spy = networkSpy();
  const service = spy.service(options.overrides);
  await expectAppError(
    service.replay({ eventId, targetUrl, caller: options.caller ?? 'agent' }),
    'invalid_argument',
    message,
  );
  spy.nothingHappened();
}

describe('choosing the target', () => {
  it.each([undefined, '', '   '])(
    'No target and no default is an error, not a guess (target_url %j)',
    async (targetUrl) => {
      await expectRefusedBeforeAnyRequest(
        targetUrl,
        /no target_url was given and replay\.default_target is not configured/,
      );
    },
  );

  it.each([
    'file:///etc/passwd',
    'gopher://127.0.0.1:70/_GET%20/',
    'ftp://127.0.0.1/pub',
    'ws://127.0.0.1:8080/socket',
    'javascript:alert(1)',
    'data:text/plain,hello',
    'dict://127.0.0.1:11211/stats',
  ])('Non-http scheme is rejected before any request: %s', async (targetUrl) => {
    await expectRefusedBeforeAnyRequest(targetUrl, /scheme [a-z]+: is not http or https/);
  });

  it('Non-http scheme is rejected before any request: a non-http default target too', async () => {
    await expectRefusedBeforeAnyRequest(undefined, /scheme file:/, {
      overrides: { replay: { defaultTarget: 'file:///var/run/secrets', timeoutMs: 3_000 } },
    });
  });

  it.each([
    'not a url',
    'http://',
    'http:/127.0.0.1/x',
    'http:\\\\127.0.0.1\\x',
    'http://exa\tmple.test/',
    'http://[::1/',
  ])('a malformed target is invalid_argument before any request: %j', async (targetUrl) => {
    await expectRefusedBeforeAnyRequest(targetUrl, /malformed/);
  });

  it('a target with credentials is invalid_argument before any request, and the credentials are stored nowhere', async () => {
    await expectRefusedBeforeAnyRequest(`http://admin:hunter2@127.0.0.1:${consumer.port}/`, /credentials/, {
      caller: 'creds-test',
    });
    const rows = (await kit.attempts.listForEvent(eventId)).filter((r) => r.caller === 'creds-test');
    expect(rows).toMatchObject([{ target_url: null, resolved_ip: null, error_code: 'invalid_argument' }]);
    expect(kit.logs.text()).not.toContain('hunter2');
  });
});

describe('SSRF policy on the wire (loopback only)', () => {
  const onlyOneTwentySevenDotOne = (): ReturnType<typeof createTargetPolicy> =>
    createTargetPolicy({ allow: ['127.0.0.1'], allowLoopbackDefault: false });

  it('a listener on a loopback address outside the policy is refused, naming the rule, and receives nothing', async () => {
    const service = kit.service({ policy: onlyOneTwentySevenDotOne() });
    await expectAppError(
      service.replay({ eventId, targetUrl: forbidden.url(), caller: 'ssrf-test' }),
      'invalid_argument',
      /^replay target refused: 127\.0\.0\.2 is not on outbound\.allow$/,
    );
    expect(forbidden.requests).toEqual([]);
    const rows = (await kit.attempts.listForEvent(eventId)).filter((r) => r.caller === 'ssrf-test');
    expect(rows).toMatchObject([
      { target_url: forbidden.url(), resolved_ip: '127.0.0.2', delivered: false, error_code: 'invalid_argument' },
    ]);
  });

  it('the allowed consumer on 127.0.0.1 is delivered to under the same policy', async () => {
    const connects: ConnectAttempt[] = [];
    const service = kit.service({ policy: onlyOneTwentySevenDotOne(), onConnect: (a) => connects.push(a) });
    const result = await service.replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({ delivered: true, response_status: 200 });
    expect(connects).toMatchObject([{ address: '127.0.0.1', port: consumer.port }]);
  });

  it('a redirect to 127.0.0.2 is reported, not followed', async () => {
    consumer.handle((_req, res) => {
      res.statusCode = 302;
      res.setHeader('location', forbidden.url('/stolen'));
      res.end();
    });
    const service = kit.service({ policy: onlyOneTwentySevenDotOne() });
    const result = await service.replay({ eventId, targetUrl: consumer.url(), caller: 'agent' });
    expect(result).toMatchObject({ delivered: true, response_status: 302 });
    expect(forbidden.connections).toBe(0);
  });

  describe('loop refusal', () => {
    let self: Consumer; // stands in for switchboard's own listener

    beforeAll(async () => {
      self = await startConsumer('127.0.0.1');
    });
    afterAll(() => self.close());

    it.each(['/hooks/github', '/mcp', '/MCP', '/hooks%2Fgithub', '//hooks/github', '/mcp/?session=1', '/hooks'])(
      "refuses switchboard's own %s",
      async (path) => {
        const service = kit.service({ selfAddresses: () => [{ host: '127.0.0.1', port: self.port }] });
        await expectAppError(
          service.replay({ eventId, targetUrl: self.url(path), caller: 'agent' }),
          'invalid_argument',
          /would loop back into switchboard/,
        );
        expect(self.connections).toBe(0);
      },
    );

    it('refuses a loop through another loopback alias or localhost', async () => {
      const service = kit.service({
        selfAddresses: () => [{ host: '127.0.0.1', port: self.port }],
        resolver: scriptedResolver(['127.0.0.1']).resolver,
      });
      await expectAppError(
        service.replay({ eventId, targetUrl: `http://127.0.0.3:${self.port}/mcp`, caller: 'agent' }),
        'invalid_argument',
        /loop back/,
      );
      await expectAppError(
        service.replay({ eventId, targetUrl: `http://localhost:${self.port}/hooks/x`, caller: 'agent' }),
        'invalid_argument',
        /loop back/,
      );
      expect(self.connections).toBe(0);
    });

    it('a path outside /hooks and /mcp on the same port is not a loop', async () => {
      const service = kit.service({ selfAddresses: () => [{ host: '127.0.0.1', port: self.port }] });
      const result = await service.replay({ eventId, targetUrl: self.url('/consumer/hooks'), caller: 'agent' });
      expect(result.delivered).toBe(true);
    });
  });
});

describe('non-loopback targets, through an injected resolver and a loopback stand-in connector only', () => {
  it('an allowed host name is resolved once and connected to at the checked address', async () => {
    const resolver = scriptedResolver(['10.20.30.40']);
    const connector = standInConnector(consumer.port);
    const service = servicePinnedTo(['consumer.internal'], resolver.resolver, connector);
    const result = await service.replay({
      eventId,
      targetUrl: `http://consumer.internal:${consumer.port}/hook`,
      caller: 'internal-test',
    });
    expect(result).toMatchObject({
      delivered: true,
      response_status: 200,
      target_url: `http://consumer.internal:${consumer.port}/hook`,
    });
    expect(resolver.calls).toEqual(['consumer.internal']);
    expect(connector.attempts.map((a) => a.hostname)).toEqual(['10.20.30.40']);
    expect(consumer.requests.at(-1)?.headers.host).toBe(`consumer.internal:${consumer.port}`);
    const rows = (await kit.attempts.listForEvent(eventId)).filter((r) => r.caller === 'internal-test');
    expect(rows).toMatchObject([{ resolved_ip: '10.20.30.40', delivered: true, response_status: 200 }]);
  });

  it('a rebinding name is resolved once: the second answer (metadata) is never asked for or used', async () => {
    const resolver = scriptedResolver(['10.0.0.5'], ['169.254.169.254']);
    const connector = standInConnector(consumer.port);
    const service = servicePinnedTo(['rebind.test'], resolver.resolver, connector);
    await service.replay({ eventId, targetUrl: `http://rebind.test:${consumer.port}/`, caller: 'agent' });
    expect(resolver.calls).toHaveLength(1);
    expect(connector.attempts.map((a) => a.hostname)).toEqual(['10.0.0.5']);
  });

  it.each([
    { address: '169.254.169.254', allow: ['0.0.0.0/0', 'metadata.evil.test'], rule: /link-local\/metadata address/ },
    { address: 'fd00:ec2::254', allow: ['::/0', 'metadata.evil.test'], rule: /link-local\/metadata address/ },
    { address: '203.0.113.9', allow: [], rule: /resolves to 203\.0\.113\.9, and neither is on outbound\.allow/ },
  ])(
    'a name resolving to $address is refused before any socket, even under a broad allow entry',
    async ({ address, allow, rule }) => {
      const resolver = scriptedResolver([address]);
      const connector = refusingConnector();
      const service = servicePinnedTo(allow, resolver.resolver, connector);
      await expectAppError(
        service.replay({ eventId, targetUrl: 'http://metadata.evil.test/latest/meta-data/', caller: 'agent' }),
        'invalid_argument',
        rule,
      );
      expect(connector.attempts).toEqual([]);
    },
  );

  it('never sends a replay back to the address the event came from', async () => {
    const fromSender = await hooksEvent('{}', '::ffff:198.51.100.20');
    const resolver = scriptedResolver(['10.9.9.9', '198.51.100.20']);
    const connector = refusingConnector();
    const service = servicePinnedTo(['sender.test'], resolver.resolver, connector);
    await expectAppError(
      service.replay({ eventId: fromSender, targetUrl: 'http://sender.test/webhooks', caller: 'agent' }),
      'invalid_argument',
      /sender\.test is 198\.51\.100\.20, the address event .* was received from; events never go back to their sender/,
    );
    expect(connector.attempts).toEqual([]);
  });

  it('a delivery from loopback (a local test sender) can still be replayed to a loopback consumer', async () => {
    const local = await hooksEvent('{}', '127.0.0.1');
    const result = await kit.service().replay({ eventId: local, targetUrl: consumer.url(), caller: 'agent' });
    expect(result.delivered).toBe(true);
  });

  it('an IP literal outside loopback and outbound.allow is refused with no DNS and no socket', async () => {
    const spy = networkSpy();
    const service = spy.service();
    await expectAppError(
      service.replay({ eventId, targetUrl: 'http://169.254.169.254/latest/meta-data/', caller: 'agent' }),
      'invalid_argument',
      /link-local/,
    );
    await expectAppError(
      service.replay({ eventId, targetUrl: 'http://10.0.0.1:8080/', caller: 'agent' }),
      'invalid_argument',
      /10\.0\.0\.1 is not on outbound\.allow \(loopback only by default\)/,
    );
    spy.nothingHappened();
  });

  it('Unreachable target is replay_failed: a name that does not resolve', async () => {
    const connector = refusingConnector();
    const service = servicePinnedTo(
      ['gone.test'],
      async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND gone.test'), { code: 'ENOTFOUND' });
      },
      connector,
    );
    await expectAppError(
      service.replay({ eventId, targetUrl: 'http://gone.test/', caller: 'agent' }),
      'replay_failed',
      /could not be resolved \(ENOTFOUND\)/,
    );
    expect(connector.attempts).toEqual([]);
  });
});
