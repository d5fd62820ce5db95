/**
 * `switchboard listen` against a server that misbehaves on purpose (issue 26, items 3 and 6–13):
 * a small fake switchboard on 127.0.0.1 answers listen's calls with terminal escapes, endless
 * Retry-After values, a cursor that never moves, answers without end, a checkpoint's event gone,
 * broken replay headers and headers that must never reach the local app. listen runs in this
 * process through the CLI command, with its output and exit code captured.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runListenCommand } from '../../src/cli/listen-command.ts';
import { checkpointPath } from '../../src/listen/checkpoint.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import {
  answerError,
  fakeEvent,
  flood,
  PROVIDERS,
  startFakeSwitchboard,
  type FakeSwitchboard,
} from './support/fake-switchboard.ts';

let fake: FakeSwitchboard;
let app: Consumer;
let state: string;
const BEFORE_EVERYTHING = '2000-01-01T00:00:00Z';

beforeAll(async () => {
  fake = await startFakeSwitchboard();
  app = await startConsumer();
  state = await mkdtemp(join(tmpdir(), 'sb-listen-hostile-'));
});

afterAll(async () => {
  await fake.close();
  await app.close();
  await rm(state, { recursive: true, force: true });
});

beforeEach(async () => {
  fake.reset();
  app.requests.length = 0;
  app.handle((_req, res) => res.end('ok'));
  await rm(join(state, 'switchboard'), { recursive: true, force: true });
});

interface Ran {
  code: number;
  out: string;
  err: string;
  /** Whether listen was still running at the deadline (and was stopped). */
  timedOut: boolean;
}

/**
 * Runs `switchboard listen <fake> --forward-to <app> …args` until it exits by itself, `stopWhen`
 * holds for its output (then it is stopped as Ctrl-C would), or the deadline passes.
 */
async function runListen(
  args: readonly string[],
  options: {
    env?: Record<string, string>;
    stopWhen?: (output: string) => boolean;
    timeoutMs?: number;
    tty?: boolean;
  } = {},
): Promise<Ran> {
  let out = '';
  let err = '';
  let stop: (() => void) | undefined;
  const running = runListenCommand([fake.url, '--forward-to', app.url('/webhooks'), ...args], {
    out: (text) => (out += text),
    err: (text) => (err += text),
    env: { SWITCHBOARD_TOKEN: 'fake-token', XDG_STATE_HOME: state, HOME: state, ...options.env },
    isTty: options.tty ?? false,
    onStop: (stopListen) => {
      stop = stopListen;
      return () => undefined;
    },
  });
  let exited: number | undefined;
  void running.then((code) => (exited = code));
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let timedOut = false;
  while (exited === undefined) {
    if (options.stopWhen?.(out + err) === true) break;
    if (Date.now() > deadline) {
      timedOut = true;
      break;
    }
    await delay(10);
  }
  stop?.();
  return { code: await running, out, err, timedOut };
}

/** Control characters, DEL, C1 and bidi controls: what must never reach a terminal raw. */
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const TERMINAL_CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('listen against a misbehaving server', () => {
  it('escapes every field that came from the server before it reaches the terminal (26.3)', async () => {
    const nasty =
      'push\u001b[2K\r12:00:00  --> github push …beef  <-- \u001b[32mverified\u001b[0m\u001b]0;owned\u0007\u009b8m\u202egpj.exe\u2066';
    const forged = fakeEvent({ provider: 'github', eventType: nasty, passedCheck: false });
    const genuine = fakeEvent({ provider: 'sandbox', eventType: `order\u001b[8m\u0008\u007f\u2067` });
    fake.events.push(forged, genuine);
    const printed = (output: string): boolean => output.includes('--> sandbox');
    const text = await runListen(['--since', BEFORE_EVERYTHING], { stopWhen: printed });
    expect(text.code, text.err).toBe(0);
    expect(text.out + text.err).not.toMatch(TERMINAL_CONTROLS);
    const skipped = text.out.split('\n').find((line) => line.includes('skipped:'));
    expect(skipped).toContain('\\x1b[2K\\r12:00:00');
    expect(skipped).toContain('\\x1b]0;owned\\x07\\x9b8m\\u202egpj.exe\\u2066');
    expect(skipped).toMatch(/skipped: it failed its check on arrival/);
    expect(text.out).toContain('--> sandbox order\\x1b[8m\\x08\\x7f\\u2067 …');

    // On a terminal, only listen's own colours are escape sequences.
    fake.reset();
    fake.events.push(forged, genuine);
    app.requests.length = 0;
    await rm(join(state, 'switchboard'), { recursive: true, force: true });
    const coloured = await runListen(['--since', BEFORE_EVERYTHING], { tty: true, stopWhen: printed });
    expect(coloured.out).toContain('\u001b[32m200');
    const ownColours = ['\u001b[0m', '\u001b[1m', '\u001b[2m', '\u001b[31m', '\u001b[32m', '\u001b[33m'];
    const withoutOwnColours = ownColours.reduce((text, code) => text.replaceAll(code, ''), coloured.out + coloured.err);
    expect(withoutOwnColours).not.toMatch(TERMINAL_CONTROLS);

    // --json stays exact: JSON escapes the controls itself, and a script reads the real value.
    fake.reset();
    fake.events.push(forged);
    await rm(join(state, 'switchboard'), { recursive: true, force: true });
    const json = await runListen(['--since', BEFORE_EVERYTHING, '--json'], {
      stopWhen: (output) => output.includes('"type":"skipped"'),
    });
    const line = json.out.split('\n').find((l) => l.includes('"type":"skipped"')) ?? '{}';
    expect((JSON.parse(line) as { event_type?: string }).event_type).toBe(nasty);
  });

  it('waits no longer than the documented maximum for a Retry-After that would overflow a timer (26.6)', async () => {
    fake.on('providers', (_req, res) => {
      res.setHeader('retry-after', '3000000');
      answerError(res, 429, 'rate_limited', 'slow down');
    });
    const started = Date.now();
    const ran = await runListen([], { stopWhen: (output) => /retry 1 in/.test(output) });
    // A second look after a while: a wait that overflowed would have fired at once, again and again.
    await delay(500);
    expect(fake.requests.filter((r) => r.startsWith('GET /api/providers'))).toHaveLength(1);
    expect(ran.err).toMatch(/GET \/api\/providers failed \(slow down\); retry 1 in 3600\.0 s/);
    expect(ran.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('stops with exit 1 when the server hands back the same next_cursor again (26.7)', async () => {
    const event = fakeEvent();
    fake.events.push(event);
    fake.on('events', (_req, res, url) => {
      if (url.searchParams.get('order') !== 'oldest_first') return answerError(res, 500, 'internal', 'unused');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ events: [event.summary], next_cursor: 'the-same-cursor' }));
    });
    const ran = await runListen(['--since', BEFORE_EVERYTHING]);
    expect(ran.timedOut).toBe(false);
    expect(ran.code).toBe(1);
    expect(ran.err.trim().split('\n').at(-1)).toMatch(/^switchboard listen: .*next_cursor "the-same-cursor" again/);
  });

  it('bounds a JSON answer without end, and names the limit (26.8)', async () => {
    let written: Promise<number> | undefined;
    fake.on('events', (_req, res) => {
      res.setHeader('content-type', 'application/json');
      written = flood(res, Buffer.from(`{"events":[${' '.repeat(65_524)}`.padEnd(65_536, ' ')), 400 * 1024 * 1024);
    });
    const ran = await runListen([], { timeoutMs: 20_000 });
    expect(ran.code).toBe(1);
    expect(ran.err).toMatch(/GET \/api\/events: the answer is over listen's limit of 4 MiB/);
    expect(await written).toBeLessThan(32 * 1024 * 1024);
  });

  it('bounds an error answer without end (26.8)', async () => {
    const written: Promise<number>[] = [];
    fake.on('providers', (_req, res) => {
      res.statusCode = 500;
      written.push(flood(res, Buffer.alloc(65_536, 'e'), 400 * 1024 * 1024));
    });
    const ran = await runListen([], { stopWhen: (output) => /retry 1 in/.test(output), timeoutMs: 20_000 });
    expect(ran.err).toMatch(/GET \/api\/providers failed \(GET \/api\/providers: HTTP 500\); retry 1 in/);
    expect(await written[0]).toBeLessThan(32 * 1024 * 1024);
  });

  it('bounds a stream line without end, and names the limit (26.8)', async () => {
    let written: Promise<number> | undefined;
    fake.on('stream', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      written ??= flood(res, Buffer.alloc(65_536, 'x'), 400 * 1024 * 1024);
    });
    const ran = await runListen([], {
      stopWhen: (output) => /the event stream failed/.test(output),
      timeoutMs: 20_000,
    });
    expect(ran.err).toMatch(/the event stream failed \(a stream message over listen's limit of 1 MiB\)/);
    expect(await written).toBeLessThan(32 * 1024 * 1024);
  });

  it('bounds raw bytes without end: the event fails, naming the limit, and the next one goes out (26.8)', async () => {
    const huge = fakeEvent();
    const next = fakeEvent({ body: '{"after":"huge"}' });
    fake.events.push(huge, next);
    let written: Promise<number> | undefined;
    fake.on('raw', (_req, res, url) => {
      if (!url.pathname.includes(huge.summary.id)) return res.end(next.body);
      written = flood(res, Buffer.alloc(1024 * 1024, 'r'), 400 * 1024 * 1024);
    });
    const ran = await runListen(['--since', BEFORE_EVERYTHING], {
      stopWhen: () => app.requests.length === 1,
      timeoutMs: 30_000,
    });
    expect(ran.out).toMatch(/skipped: its body is over listen's limit of 100 MiB/);
    expect(app.requests.map((r) => r.body.toString())).toEqual(['{"after":"huge"}']);
    expect(await written).toBeLessThan(160 * 1024 * 1024);
  }, 60_000);

  it('resumes from the time of a checkpoint event that is gone, and forwards everything after it (26.9)', async () => {
    const before = fakeEvent({ body: '{"n":"before"}' });
    const gone = fakeEvent({ id: '01940000-0000-7000-8000-000000000002' });
    // Received in the same microsecond as the deleted event: one before it in the list's order, one after.
    const at = gone.summary.received_at;
    const sameBefore = fakeEvent({
      id: '01940000-0000-7000-8000-000000000001',
      receivedAt: at,
      body: '{"n":"same, before"}',
    });
    const sameAfter = fakeEvent({
      id: '01940000-0000-7000-8000-000000000003',
      receivedAt: at,
      body: '{"n":"same, after"}',
    });
    const after = [1, 2, 3].map((n) => fakeEvent({ body: `{"n":${n}}` }));
    // As the server lists them; the deleted event is not among them any more.
    fake.events.push(before, sameBefore, sameAfter, ...after);
    const key = { server: fake.url, providers: [], eventTypes: [] };
    const checkpointFile = checkpointPath(key, { XDG_STATE_HOME: state }, state);
    await mkdir(join(state, 'switchboard'), { recursive: true });
    await writeFile(
      checkpointFile,
      JSON.stringify({
        server: fake.url,
        providers: [],
        event_types: [],
        last_event_id: gone.summary.id,
        last_received_at: at,
        updated_at: new Date().toISOString(),
      }),
    );
    const ran = await runListen([], { stopWhen: () => app.requests.length >= 4 });
    await delay(200);
    expect(ran.err).toMatch(/event 01940000-0000-7000-8000-000000000002 is no longer stored; catching up from/);
    expect(app.requests.map((r) => r.body.toString())).toEqual([
      '{"n":"same, after"}',
      '{"n":1}',
      '{"n":2}',
      '{"n":3}',
    ]);
  });

  it('prints an error from replay-headers on one line and exits 1 (26.10)', async () => {
    for (const answer of ['400', 'off-contract'] as const) {
      fake.reset();
      await rm(join(state, 'switchboard'), { recursive: true, force: true });
      fake.events.push(fakeEvent());
      fake.on('replay-headers', (_req, res) => {
        if (answer === '400') return answerError(res, 400, 'invalid_argument', 'no\u001b[31m replay headers\nfor you');
        res.setHeader('content-type', 'application/json');
        res.end('{"id":"not what listen expects"}');
      });
      const ran = await runListen(['--since', BEFORE_EVERYTHING]);
      expect(ran.code, answer).toBe(1);
      const lines = ran.err.trim().split('\n');
      expect(lines.at(-1), ran.err).toMatch(/^switchboard listen: /);
      expect(ran.err).not.toMatch(/\n\s+at /);
      if (answer === '400') expect(lines.at(-1)).toContain('no\\x1b[31m replay headers\\nfor you');
      else expect(lines.at(-1)).toContain('the answer is not what this listen expects');
    }
  });

  it('never forwards the headers the server side never sends, whatever the server hands over (26.12)', async () => {
    const event = fakeEvent({ provider: 'github', eventType: 'push' });
    event.replay.headers = {
      ...event.replay.headers,
      'x-github-event': 'push',
      'user-agent': 'GitHub-Hookshot/abc',
      host: 'evil.example',
      authorization: 'Bearer stolen',
      cookie: 'session=stolen',
      'proxy-authorization': 'Basic c3RvbGVu',
      'x-hub-signature-256': 'sha256=forged',
      'x-forwarded-for': '203.0.113.9',
      forwarded: 'for=203.0.113.9',
      'x-real-ip': '203.0.113.9',
      'proxy-connection': 'keep-alive',
      'content-length': '1',
      expect: '100-continue',
      'x-switchboard-replay': 'some-other-event',
    };
    fake.events.push(event);
    const ran = await runListen(['--since', BEFORE_EVERYTHING], { stopWhen: () => app.requests.length === 1 });
    expect(ran.code, ran.out + ran.err).toBe(0);
    const [got] = app.requests;
    expect(got?.body.equals(event.body)).toBe(true);
    const headers = got?.headers ?? {};
    expect(headers.host).toBe(`127.0.0.1:${app.port}`);
    for (const name of [
      'authorization',
      'cookie',
      'proxy-authorization',
      'x-hub-signature-256',
      'x-forwarded-for',
      'forwarded',
      'x-real-ip',
      'proxy-connection',
      'expect',
    ])
      expect(headers[name], name).toBeUndefined();
    expect(headers['content-length']).toBe(String(event.body.length));
    expect(headers['x-switchboard-replay']).toBe(event.summary.id);
    expect(headers['x-github-event']).toBe('push');
    expect(headers['content-type']).toBe('application/json');
  });

  describe('secrets from the environment or a file, not the command line (26.13)', () => {
    const SECRET = 'laptop-secret-from-a-file';
    let files: { token: string; secret: string; empty: string };

    beforeAll(async () => {
      files = { token: join(state, 'token'), secret: join(state, 'secret'), empty: join(state, 'empty') };
      await writeFile(files.token, 'file-token\n', { mode: 0o600 });
      await writeFile(files.secret, `${SECRET}\n`, { mode: 0o600 });
      await writeFile(files.empty, '\n', { mode: 0o600 });
    });

    /** Only this token is let in. */
    const requireToken = (token: string): void =>
      fake.on('providers', (req, res) => {
        if (req.headers.authorization !== `Bearer ${token}`)
          return answerError(res, 401, 'unauthenticated', 'bad token');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ providers: [] }));
      });

    it('reads --token-file and --sign-secret-file, and signs with the secret from the file', async () => {
      const event = fakeEvent({ provider: 'github', eventType: 'push' });
      fake.events.push(event);
      fake.on('providers', (req, res) => {
        if (req.headers.authorization !== 'Bearer file-token') return answerError(res, 401, 'unauthenticated', 'bad');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ providers: PROVIDERS.filter((provider) => provider.name === 'github') }));
      });
      const ran = await runListen(
        ['--token-file', files.token, '--sign-secret-file', files.secret, '--since', BEFORE_EVERYTHING],
        { env: { SWITCHBOARD_TOKEN: '' }, stopWhen: () => app.requests.length === 1 },
      );
      expect(ran.code, ran.err).toBe(0);
      expect(ran.err).not.toMatch(/Warning/);
      const signature = app.requests[0]?.headers['x-hub-signature-256'];
      expect(await octokitVerify(SECRET, event.body.toString(), String(signature))).toBe(true);
    });

    it('reads SWITCHBOARD_TOKEN and SWITCHBOARD_SIGN_SECRET without a warning', async () => {
      requireToken('env-token');
      const ran = await runListen([], {
        env: { SWITCHBOARD_TOKEN: 'env-token', SWITCHBOARD_SIGN_SECRET: SECRET },
        stopWhen: (output) => output.includes('Ready!'),
      });
      expect(ran.code, ran.err).toBe(0);
      expect(ran.err).toContain('signing with your secret');
      expect(ran.err).not.toMatch(/Warning/);
    });

    it('still takes the bare --token and --sign-secret, with a warning for each', async () => {
      requireToken('flag-token');
      const ran = await runListen(['--token', 'flag-token', '--sign-secret', SECRET], {
        stopWhen: (output) => output.includes('Ready!'),
      });
      expect(ran.code, ran.err).toBe(0);
      expect(ran.err).toMatch(
        /Warning: --token shows in ps and in your shell history; use SWITCHBOARD_TOKEN or --token-file/,
      );
      expect(ran.err).toMatch(
        /Warning: --sign-secret shows in ps and in your shell history; use SWITCHBOARD_SIGN_SECRET or --sign-secret-file/,
      );
    });

    it('exits 2 on two forms at once, an empty file or a missing one; --help shows only the safe forms', async () => {
      for (const args of [
        ['--token', 'x', '--token-file', files.token],
        ['--sign-secret', 'x', '--sign-secret-file', files.secret],
        ['--token-file', files.empty],
        ['--sign-secret-file', files.empty],
        ['--token-file', join(state, 'no-such-file')],
      ]) {
        const ran = await runListen(args);
        expect(ran.code, args.join(' ')).toBe(2);
        expect(ran.err).toMatch(/^switchboard listen: --(token|sign-secret)/);
      }
      expect(fake.requests).toEqual([]);
      const help = await runListen(['--help']);
      expect(help.code).toBe(0);
      expect(help.out).toContain('--token-file PATH');
      expect(help.out).toContain('--sign-secret-file PATH');
      expect(help.out).not.toMatch(/--token T\b|--sign-secret S\b/);
    });
  });
});
