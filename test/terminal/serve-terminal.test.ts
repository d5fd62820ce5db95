/**
 * 41.1: `switchboard serve` on a terminal prints a line per event stored and per forward attempt,
 * the way `stripe listen` does. The real product runs as a child process under a pseudo-terminal
 * (util-linux `script`), on its own database, with a forward rule to a consumer on 127.0.0.1;
 * deliveries are signed with GitHub's and Stripe's own packages.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase } from '../support/database.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { spawnSwitchboard, type SpawnedSwitchboard } from '../support/spawn-switchboard.ts';

const GH_SECRET = 'serve-terminal-github-secret';
const STRIPE_SECRET = 'whsec_c2VydmUtdGVybWluYWwtc3RyaXBl';

let consumer: Consumer;
const drops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  consumer = await startConsumer();
});

afterAll(async () => {
  await consumer?.close();
  for (const drop of drops) await drop();
});

const config = (): string =>
  [
    'providers:',
    `  github: { preset: github, secret: ${GH_SECRET} }`,
    `  stripe: { preset: stripe, secret: "${STRIPE_SECRET}" }`,
    'forward:',
    `  app: { to: "${consumer.url('/webhooks')}", providers: [github] }`,
    '',
  ].join('\n');

async function serve(options: { terminal: boolean; extraArgs?: string[] }): Promise<SpawnedSwitchboard> {
  const db = await createMigratedDatabase();
  drops.push(() => db.drop());
  return spawnSwitchboard({
    config: config(),
    databaseUrl: db.url,
    terminal: options.terminal,
    extraArgs: options.extraArgs ?? [],
    // Colours would only get between the words the test reads; the escaping is what it checks.
    env: { NO_COLOR: '1' },
  });
}

/** Posts a GitHub delivery, signed with the server's secret or forged; the answer's status and event id. */
async function sendGithub(
  server: SpawnedSwitchboard,
  event: string,
  forged = false,
): Promise<{ status: number; id: string | undefined }> {
  const body = JSON.stringify({ ref: 'refs/heads/main', nonce: randomUUID() });
  const res = await fetch(`${server.url}/hooks/github`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': await octokitSign(forged ? 'not-the-secret' : GH_SECRET, body),
    },
    body,
  });
  const answer = (await res.json()) as { id?: string };
  return { status: res.status, id: answer.id };
}

/** The output's lines with the terminal's \r\n as \n. */
const outputOf = (server: SpawnedSwitchboard): string => server.output().replaceAll('\r\n', '\n');

async function waitForLine(server: SpawnedSwitchboard, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = outputOf(server)
      .split('\n')
      .find((l) => pattern.test(l));
    if (line !== undefined) return line;
    if (Date.now() > deadline)
      throw new Error(`no line ${String(pattern)} within ${timeoutMs} ms:\n${outputOf(server)}`);
    await delay(50);
  }
}

const tail = (id: string | undefined): string => `…${(id ?? '').slice(-4)}`;
const EVENT_LINES = /-->/;

describe('serve on a terminal (41.1)', () => {
  it('prints a line per event accepted, rejected and forwarded, with the escaped event type', async () => {
    const server = await serve({ terminal: true });
    try {
      const accepted = await sendGithub(server, 'push');
      expect(accepted.status).toBe(200);
      const short = tail(accepted.id);
      expect(await waitForLine(server, new RegExp(`--> github push ${short} `))).toMatch(
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d {2}--> github push ${short} {2}Verified {2}<-- 200$`),
      );
      expect(await waitForLine(server, new RegExp(`--> github push ${short} {2}→`))).toMatch(
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d {2}--> github push ${short} {2}→ app 200 in \\d+ ms$`),
      );
      await waitFor(() => consumer.requests.length >= 1);

      const forged = await sendGithub(server, 'issues', true);
      expect(forged.status).toBe(401);
      expect(await waitForLine(server, /--> github issues /)).toMatch(
        /^\d\d:\d\d:\d\d {2}--> github issues …[0-9a-f]{4} {2}Sig failed {2}<-- 401$/,
      );

      // A forged delivery whose type would clear the line and print a green "verified", were it printed raw.
      const nastyType = '\u001b[2K\r\u001b[32mverified\u001b[0m\u0007\u202e';
      const body = JSON.stringify({ id: 'evt_forged', object: 'event', type: nastyType });
      const res = await fetch(`${server.url}/hooks/stripe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=forged' },
        body,
      });
      expect(res.status).toBe(401);
      const line = await waitForLine(server, /--> stripe /);
      expect(line).toMatch(
        /^\d\d:\d\d:\d\d {2}--> stripe \\x1b\[2K\\r\\x1b\[32mverified\\x1b\[0m\\x07\\u202e …[0-9a-f]{4} {2}Sig failed {2}<-- 401$/,
      );
      // Nothing of the delivery reached the terminal raw: no ESC, BEL or bidi override on any line of ours.
      const ours = outputOf(server)
        .split('\n')
        .filter((l) => EVENT_LINES.test(l));
      expect(ours.length).toBeGreaterThanOrEqual(4);
      for (const l of ours) for (const raw of ['\u001b', '\u0007', '\u202e']) expect(l).not.toContain(raw);
      expect((await server.stop()).code).toBe(0);
    } finally {
      await server.stop();
      server.cleanup();
    }
  }, 120_000);

  it('prints none when stdout is not a terminal (the JSON logs stay as they are), nor with --quiet', async () => {
    const [piped, quiet] = await Promise.all([
      serve({ terminal: false }),
      serve({ terminal: true, extraArgs: ['--quiet'] }),
    ]);
    try {
      const before = consumer.requests.length;
      for (const server of [piped, quiet]) expect((await sendGithub(server, 'push')).status).toBe(200);
      for (const server of [piped, quiet]) expect((await sendGithub(server, 'issues', true)).status).toBe(401);
      // Both events forwarded: whatever would have been printed for them has been by now.
      await waitFor(() => consumer.requests.length >= before + 2);
      await delay(500);
      expect(outputOf(piped)).not.toMatch(EVENT_LINES);
      expect(outputOf(quiet)).not.toMatch(EVENT_LINES);
      // Not a terminal: the logs are JSON lines, as before.
      expect(piped.logLines().map((line) => line.msg)).toContain('webhook rejected');
    } finally {
      for (const server of [piped, quiet]) {
        await server.stop();
        server.cleanup();
      }
    }
  }, 120_000);
});

async function waitFor(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await delay(50);
  }
}
