import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fetch, request, type Dispatcher } from 'undici';
import {
  createGuardedDispatcher,
  type ConnectAttempt,
} from '../../../src/outbound/target-policy/guarded-dispatcher.ts';
import { createTargetPolicy } from '../../../src/outbound/target-policy/target-policy.ts';
import { expectRefused, prepareDelivery, startServer, type TestServer } from './test-helpers.ts';

/*
 * The real socket path (undici's own connector, no injection), on loopback only: every URL below
 * is a 127.0.0.x literal, so not even DNS is asked.
 */

let forbidden: TestServer; // 127.0.0.2: must never see a connection
let consumer: TestServer; // 127.0.0.1: the allowed consumer
let redirector: TestServer; // 127.0.0.1: answers 302 towards `forbidden`
const dispatchers: Dispatcher[] = [];

const onlyOneTwentySevenDotOne = (): ReturnType<typeof createTargetPolicy> =>
  createTargetPolicy({ allow: ['127.0.0.1'], allowLoopbackDefault: false });

beforeAll(async () => {
  forbidden = await startServer('127.0.0.2', (_req, res) => res.end('should not be reached'));
  consumer = await startServer('127.0.0.1', (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ received: body }));
    });
  });
  redirector = await startServer('127.0.0.1', (_req, res) => {
    res.statusCode = 302;
    res.setHeader('location', `http://127.0.0.2:${forbidden.port}/`);
    res.end();
  });
});

afterAll(async () => {
  await Promise.all([forbidden.close(), consumer.close(), redirector.close()]);
});

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  expect(forbidden.connections, '127.0.0.2 listener must never be connected to').toBe(0);
});

const track = <T extends Dispatcher>(d: T): T => {
  dispatchers.push(d);
  return d;
};

/** A delivery checked and pinned to the redirector under the default policy, its dispatcher tracked. */
async function pinnedToRedirector(): Promise<Awaited<ReturnType<typeof prepareDelivery>>> {
  const delivery = await prepareDelivery(`http://127.0.0.1:${redirector.port}/start`, {
    policy: createTargetPolicy({ allow: [] }),
  });
  track(delivery.dispatcher);
  return delivery;
}

describe('on the wire, loopback only', () => {
  it('a listener on a loopback address outside the policy is refused and receives nothing', async () => {
    const attempts: ConnectAttempt[] = [];
    const dispatcher = track(
      createGuardedDispatcher({ policy: onlyOneTwentySevenDotOne(), onConnect: (a) => attempts.push(a) }),
    );
    await expectRefused(
      request(`http://127.0.0.2:${forbidden.port}/hooks-consumer`, { dispatcher, method: 'POST', body: '{}' }),
      /^127\.0\.0\.2 is not on outbound\.allow$/,
    );
    await expectRefused(
      prepareDelivery(`http://127.0.0.2:${forbidden.port}/`, { policy: onlyOneTwentySevenDotOne() }),
      /127\.0\.0\.2 is not on outbound\.allow/,
    );
    expect(attempts).toEqual([]);
    expect(forbidden.connections).toBe(0);
    expect(forbidden.requests).toEqual([]);
  });

  it('delivers to an allowed consumer', async () => {
    const attempts: ConnectAttempt[] = [];
    const { target, dispatcher } = await prepareDelivery(`http://127.0.0.1:${consumer.port}/webhook`, {
      policy: onlyOneTwentySevenDotOne(),
      onConnect: (a) => attempts.push(a),
    });
    track(dispatcher);
    expect(target).toMatchObject({ hostname: '127.0.0.1', resolvedIp: '127.0.0.1', port: consumer.port });

    const res = await request(target.url, {
      dispatcher,
      method: 'POST',
      body: '{"event":1}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ received: '{"event":1}' });
    expect(attempts).toMatchObject([{ address: '127.0.0.1', port: consumer.port }]);
  });

  it('does not follow a redirect towards another loopback listener, even one the policy would allow', async () => {
    // Default policy: 127.0.0.2 is allowed, so only "not following" keeps the request away from it.
    const dispatcher = track(createGuardedDispatcher({ policy: createTargetPolicy({ allow: [] }) }));
    const res = await request(`http://127.0.0.1:${redirector.port}/start`, { dispatcher, method: 'POST', body: '{}' });
    await res.body.dump();
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`http://127.0.0.2:${forbidden.port}/`);
    expect(redirector.requests).toHaveLength(1);
    expect(forbidden.connections).toBe(0);
  });

  it('the pinned dispatcher reports the 302 too', async () => {
    const { target, dispatcher } = await pinnedToRedirector();
    const res = await request(target.url, { dispatcher });
    await res.body.dump();
    expect(res.statusCode).toBe(302);
    expect(forbidden.connections).toBe(0);
  });

  it('a caller that wrongly uses fetch() with redirect: follow is still stopped by the pin', async () => {
    const { target, dispatcher } = await pinnedToRedirector();
    const failure = await fetch(target.url, { dispatcher }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TypeError);
    expect(String((failure as TypeError).cause)).toMatch(/is not the checked target/);
    expect(forbidden.connections).toBe(0);
  });
});
