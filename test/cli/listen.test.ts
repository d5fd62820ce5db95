/**
 * `switchboard listen` end to end: a real switchboard (the composed server, on its own database)
 * on 127.0.0.1, the CLI as a child process, and a local consumer on 127.0.0.1 recording what
 * arrives. Senders sign with the server's secrets; the consumer verifies with the laptop's secret
 * through the providers' own libraries.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { verify as octokitVerify, sign as octokitSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { createTokenRepository } from '../../src/store/records/token-repository.ts';
import { startListenWire, type ListenWire } from '../listen/support/listen-wire.ts';
import type { ComposedServer } from '../support/composed-server.ts';
import { closedPort, type Consumer } from '../support/local-server.ts';
import { spawnListen, type ListenChild } from '../support/spawn-listen.ts';
import { startControlledProxy } from '../support/tcp-proxy.ts';

const TOKEN = `listen-test-${randomUUID()}`;
const GH_SECRET = 'github-secret-on-the-server';
const STRIPE_SECRET = 'whsec_c2VydmVyLXNpZGUtc3RyaXBlLXNlY3JldA==';
/** The developer's own secret: the local app verifies with it, the server never sees it. */
const LAPTOP_SECRET = 'whsec_bGFwdG9wLXNpZGUtZGV2LXNlY3JldA==';
const stripe = new Stripe('sk_test_listen');

let wire: ListenWire;
let composed: ComposedServer;
let server: string;

beforeAll(async () => {
  wire = await startListenWire({
    token: TOKEN,
    // A read limit a 50-event catch-up runs into, so the test sees listen wait for Retry-After;
    // allowed_hosts lets listen in through the TCP proxy, as behind a reverse proxy.
    config: [
      'server:',
      '  allowed_hosts: ["127.0.0.1"]',
      'providers:',
      `  github: { preset: github, secret: ${GH_SECRET} }`,
      `  stripe: { preset: stripe, secret: "${STRIPE_SECRET}" }`,
      '  sandbox: { trust_mode: open }',
      'rate_limits:',
      '  read: { capacity: 20, refill_per_second: 10 }',
      '',
    ].join('\n'),
  });
  ({ composed, server } = wire);
});

afterAll(async () => {
  await wire?.close();
});

const stateDir = (): Promise<string> => wire.stateDir();
const consumer = (): Promise<Consumer> => wire.consumer();
const post = (path: string, body: string, headers: Record<string, string>): Promise<number> =>
  wire.post(path, body, headers);

async function sendGithub(body: string, options: { event?: string; forged?: boolean } = {}): Promise<void> {
  const status = await post('/hooks/github', body, {
    'x-github-event': options.event ?? 'push',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': await octokitSign(options.forged === true ? 'not-the-secret' : GH_SECRET, body),
  });
  expect(status).toBe(options.forged === true ? 401 : 200);
}

async function sendStripe(type: string, extra = ''): Promise<string> {
  const body = `{"id":"evt_${randomUUID().replaceAll('-', '')}","object":"event","type":"${type}"${extra}}`;
  const status = await post('/hooks/stripe', body, {
    'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET }),
  });
  expect(status).toBe(200);
  return body;
}

async function sendOpen(body: string): Promise<void> {
  expect(await post('/hooks/sandbox', body, {})).toBe(200);
}

const listenFor = (
  target: Consumer,
  args: readonly string[],
  state: string,
  serverUrl = server,
  env: Record<string, string> = {},
): ListenChild => wire.listen(target, args, state, serverUrl, env);

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}

const bodies = (c: Consumer): string[] => c.requests.map((r) => r.body.toString('utf8'));
const header = (value: string | string[] | undefined): string =>
  Array.isArray(value) ? (value[0] ?? '') : (value ?? '');

describe('switchboard listen', () => {
  it('exits 2 with the usage on bad flags, before anything else', async () => {
    for (const argv of [
      ['listen', server],
      ['listen', server, '--forward-to', 'http://127.0.0.1:1/x', '--max-attempts', '0'],
      ['listen', server, '--forward-to', 'http://127.0.0.1:1/x', '--since', 'yesterday'],
      ['listen', server, '--forward-to', 'ftp://127.0.0.1/x'],
      ['listen', server, '--forward-to', 'http://127.0.0.1:1/x', '--bogus'],
    ]) {
      let err = '';
      const code = await main(argv, { out: () => undefined, err: (t) => (err += t) });
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toContain('Usage: switchboard listen <server-url> --forward-to <url>');
    }
  });

  it('exits 1 at once with the server message when the token is wrong', async () => {
    const target = await consumer();
    const child = spawnListen([server, '--forward-to', target.url()], {
      SWITCHBOARD_TOKEN: 'not-a-token',
      XDG_STATE_HOME: await stateDir(),
    });
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    expect(child.stderr()).toMatch(/switchboard listen: .*(token|Bearer|authenticat)/i);
    expect(target.requests).toHaveLength(0);
  });

  it('retries an unreachable server, printing each retry, and still stops within 5 s on SIGTERM', async () => {
    const target = await consumer();
    const child = listenFor(target, [], await stateDir(), `http://127.0.0.1:${await closedPort()}`);
    await child.waitFor(/GET \/api\/providers failed \(.*ECONNREFUSED.*\); retry 2 in/);
    const exit = await child.stop('SIGTERM');
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(5000);
    expect(child.stdout()).toMatch(/^Stopped: 0 forwarded, 0 failed, 0 skipped$/m);
  }, 60_000);

  it('exits 1 with the server message once its token is revoked mid-run', async () => {
    const tokens = createTokenRepository(composed.running.database.pool);
    const { token } = await tokens.create('listen-revoked');
    const target = await consumer();
    const state = await stateDir();
    await writeFile(join(state, 'token'), `${token}\n`, { mode: 0o600 });
    const child = spawnListen([server, '--forward-to', target.url(), '--token-file', join(state, 'token')], {
      XDG_STATE_HOME: state,
    });
    wire.defer(async () => {
      await child.stop('SIGKILL');
    });
    await child.waitFor(/^Ready!/m);
    await tokens.revoke('listen-revoked');
    const exit = await Promise.race([child.exited, delay(15_000).then(() => null)]);
    expect(exit?.code, child.stderr()).toBe(1);
    expect(child.stderr()).toMatch(/switchboard listen: .*(token|Bearer|authenticat)/i);
  }, 60_000);

  it('forwards the exact bytes, re-signed with the laptop secret; skips events that failed their check', async () => {
    const target = await consumer();
    const state = await stateDir();
    await writeFile(join(state, 'secret'), LAPTOP_SECRET, { mode: 0o600 });
    const child = listenFor(target, ['--sign-secret-file', join(state, 'secret')], state);
    await child.waitFor(/^Ready! Forwarding .* → .*\(signing with your secret\)/m);

    const githubBody = '{ "ref": "refs/heads/main",\t"note": "caf\u00e9 \ud83d\ude80",\n  "n": 1 }\r\n';
    await sendGithub(githubBody);
    const stripeBody = await sendStripe('invoice.paid', ', "amount": 1200 ');
    await sendGithub('{"forged":true}', { forged: true });
    // Issue 26.3: a forged delivery whose type would rewrite the line to a green "verified", hide
    // the skipped notice and set the window title, were it printed raw.
    const nastyType = '\u001b[2K\r\u001b[32mverified\u001b[0m\u001b[8m\u001b]0;owned\u0007';
    const forgedStripe = JSON.stringify({ id: 'evt_forged', object: 'event', type: nastyType });
    expect(await post('/hooks/stripe', forgedStripe, { 'stripe-signature': 't=1,v1=forged' })).toBe(401);
    const openBody = '<xml>open &amp; unsigned</xml>';
    await sendOpen(openBody);
    await until(() => target.requests.length >= 3, 'three forwarded events');
    await child.waitFor(/--> stripe .*skipped: it failed its check/);
    expect(child.stdout()).toMatch(
      /--> stripe \\x1b\[2K\\r\\x1b\[32mverified\\x1b\[0m\\x1b\[8m\\x1b\]0;owned\\x07 …[0-9a-f]{4} {2}skipped: it failed its check/,
    );
    expect(bodies(target), child.stdout() + child.stderr()).toEqual([githubBody, stripeBody, openBody]);

    const [gh, st, open] = target.requests;
    if (gh === undefined || st === undefined || open === undefined) throw new Error('missing requests');
    expect(gh.body.equals(Buffer.from(githubBody, 'utf8'))).toBe(true);
    expect(header(gh.headers['x-github-event'])).toBe('push');
    expect(await octokitVerify(LAPTOP_SECRET, githubBody, header(gh.headers['x-hub-signature-256']))).toBe(true);
    expect(await octokitVerify(GH_SECRET, githubBody, header(gh.headers['x-hub-signature-256']))).toBe(false);

    expect(st.body.toString('utf8')).toBe(stripeBody);
    const event = stripe.webhooks.constructEvent(st.body, header(st.headers['stripe-signature']), LAPTOP_SECRET);
    expect(event.type).toBe('invoice.paid');
    expect(() =>
      stripe.webhooks.constructEvent(st.body, header(st.headers['stripe-signature']), STRIPE_SECRET),
    ).toThrow();

    expect(open.body.toString('utf8')).toBe(openBody);
    expect(open.headers['x-hub-signature-256']).toBeUndefined();
    expect(open.headers['stripe-signature']).toBeUndefined();
    expect(bodies(target)).not.toContain('{"forged":true}');
    expect(child.stdout()).toMatch(
      /^\d\d:\d\d:\d\d {2}--> github push …[0-9a-f]{4} {2}<-- 200 POST http:\/\/127\.0\.0\.1:\d+\/webhooks \(\d+ ms\)/m,
    );

    // Not a terminal: no colours.
    expect(child.stdout() + child.stderr()).not.toContain('\u001b[');
    const exit = await child.stop('SIGINT');
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(5000);
    expect(child.stdout()).toMatch(/^Stopped: 3 forwarded, 0 failed, 2 skipped$/m);
    const [file] = await readdir(join(state, 'switchboard'));
    expect(file).toMatch(/^listen-[0-9a-f]{16}\.json$/);
    expect((await stat(join(state, 'switchboard', file ?? ''))).mode & 0o777).toBe(0o600);
  }, 60_000);

  it('with --include-unverified sends events that failed their check, unsigned; filters select', async () => {
    const target = await consumer();
    const child = listenFor(
      target,
      ['--include-unverified', '--provider', 'github', '--event-type', 'issues', '--json'],
      await stateDir(),
      server,
      { SWITCHBOARD_SIGN_SECRET: LAPTOP_SECRET },
    );
    await child.waitFor(/"type":"ready"/);
    await sendGithub('{"forged":"issue"}', { forged: true, event: 'issues' });
    await sendGithub('{"a":"push"}', { event: 'push' });
    await sendStripe('invoice.paid');
    await sendGithub('{"a":"issue"}', { event: 'issues' });
    await until(() => target.requests.length >= 2, 'two forwarded events');
    await delay(300);
    expect(bodies(target)).toEqual(['{"forged":"issue"}', '{"a":"issue"}']);
    const [forged, genuine] = target.requests;
    expect(forged?.headers['x-hub-signature-256']).toBeUndefined();
    expect(await octokitVerify(LAPTOP_SECRET, '{"a":"issue"}', header(genuine?.headers['x-hub-signature-256']))).toBe(
      true,
    );
    const lines = child
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; signed?: boolean });
    expect(lines.filter((l) => l.type === 'forwarded').map((l) => l.signed)).toEqual([false, true]);
    expect((await child.stop('SIGTERM')).code).toBe(0);
  }, 60_000);

  it('loses nothing across a dropped connection: 50 events sent while it is down arrive once, in order', async () => {
    const target = await consumer();
    const proxy = await startControlledProxy('127.0.0.1', Number(new URL(server).port));
    wire.defer(() => proxy.close());
    const child = listenFor(target, [], await stateDir(), proxy.via(server));
    await child.waitFor(/^Ready!/m);
    await sendOpen('{"n":0}');
    await until(() => target.requests.length === 1, 'the first event');

    await proxy.down();
    const sent = Array.from({ length: 50 }, (_, i) => `{"n":${i + 1}}`);
    for (const body of sent) await sendOpen(body);
    await child.waitFor(/the event stream failed/);
    // While the server is away, each retry is printed; the server comes back only after one was.
    await child.waitFor(/GET \/api\/stream failed \(.*ECONNREFUSED.*\); retry 1 in/);
    expect(child.stderr()).toMatch(/GET \/api\/stream failed \(.*ECONNREFUSED.*\); retry 1 in/);
    await proxy.up();
    await until(() => target.requests.length >= 51, 'all 51 events', 40_000);
    await child.waitFor(/Reconnected to/);
    await delay(300);
    expect(bodies(target)).toEqual(['{"n":0}', ...sent]);
    // The catch-up ran into the read rate limit and waited as told.
    expect(child.stderr()).toMatch(/rate limit reached; retry after \d+ s\); retry 1 in/);
    expect((await child.stop('SIGINT')).code).toBe(0);
    expect(child.stdout()).toMatch(/^Stopped: 51 forwarded, 0 failed, 0 skipped$/m);
  }, 60_000);

  it('resumes from its checkpoint after a restart, and --since now skips the backlog', async () => {
    const target = await consumer();
    const state = await stateDir();
    const first = listenFor(target, ['--provider', 'sandbox'], state);
    await first.waitFor(/^Ready!/m);
    await sendOpen('{"run":1,"n":1}');
    await until(() => target.requests.length === 1, 'the first event');
    expect((await first.stop('SIGTERM')).code).toBe(0);

    const whileStopped = ['{"run":2,"n":1}', '{"run":2,"n":2}', '{"run":2,"n":3}'];
    for (const body of whileStopped) await sendOpen(body);
    await sendGithub('{"not":"sandbox"}');
    const second = listenFor(target, ['--provider', 'sandbox'], state);
    await second.waitFor(/^Ready!/m);
    expect(bodies(target)).toEqual(['{"run":1,"n":1}', ...whileStopped]);
    expect(second.stderr()).toMatch(/resuming after event/);
    expect((await second.stop('SIGINT')).code).toBe(0);

    await sendOpen('{"run":3,"skipped":true}');
    const third = listenFor(target, ['--provider', 'sandbox', '--since', 'now'], state);
    await third.waitFor(/^Ready!/m);
    await sendOpen('{"run":3,"n":1}');
    await until(() => target.requests.length === 5, 'the live event');
    expect((await third.stop('SIGINT')).code).toBe(0);

    // A checkpoint past the 24-hour window is not resumed.
    const [file] = await readdir(join(state, 'switchboard'));
    const path = join(state, 'switchboard', file ?? '');
    const saved = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    await writeFile(path, JSON.stringify({ ...saved, updated_at: new Date(Date.now() - 25 * 3600_000).toISOString() }));
    await sendOpen('{"run":4,"stale":true}');
    const fourth = listenFor(target, ['--provider', 'sandbox'], state);
    await fourth.waitFor(/^Ready!/m);
    expect(fourth.stderr()).toMatch(/Warning: the checkpoint is from .*more than 24 hours ago; starting from now/);
    expect((await fourth.stop('SIGINT')).code).toBe(0);
    expect(bodies(target)).toEqual(['{"run":1,"n":1}', ...whileStopped, '{"run":3,"n":1}']);

    // --since <event id> starts after that event, whatever the checkpoint says.
    const listed = await fetch(`${server}/api/events?provider=sandbox&limit=2`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const [, runThree] = ((await listed.json()) as { events: { id: string }[] }).events;
    const fifth = listenFor(target, ['--provider', 'sandbox', '--since', runThree?.id ?? ''], state);
    await fifth.waitFor(/^Ready!/m);
    expect((await fifth.stop('SIGINT')).code).toBe(0);
    expect(bodies(target).slice(5)).toEqual(['{"run":4,"stale":true}']);
  }, 60_000);

  it('holds events back while the local app fails, and delivers them in order when it recovers', async () => {
    const target = await consumer();
    target.handle((_req, res) => {
      res.statusCode = 500;
      res.end('down');
    });
    const child = listenFor(target, ['--max-attempts', '10'], await stateDir());
    await child.waitFor(/^Ready!/m);
    for (const n of [1, 2, 3]) await sendOpen(`{"order":${n}}`);
    await child.waitFor(/<-- 500 POST .* attempt 2\/10, retrying/);
    target.handle((_req, res) => res.end('ok'));
    await until(
      () => new Set(bodies(target)).size === 3 && target.requests.at(-1)?.body.toString() === '{"order":3}',
      'recovery',
    );
    // Every request before the first success was the first event, retried: nothing raced ahead.
    const seen = bodies(target);
    const firstOther = seen.findIndex((b) => b !== '{"order":1}');
    expect(seen.slice(firstOther)).toEqual(['{"order":2}', '{"order":3}']);
    expect(firstOther).toBeGreaterThanOrEqual(2);
    expect((await child.stop('SIGINT')).code).toBe(0);
    expect(child.stdout()).toMatch(/^Stopped: 3 forwarded, 0 failed, 0 skipped$/m);
  }, 60_000);
});
