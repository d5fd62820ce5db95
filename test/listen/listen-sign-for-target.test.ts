/**
 * `switchboard listen --sign-for-target` (issue 41.15): a Twilio delivery relayed to a laptop is
 * signed for the local app's own URL, so an app using Twilio's stock twilio.webhook() middleware
 * (express, as Twilio documents it) accepts it unchanged. Without the flag it is signed for the
 * server's public_url, as Twilio signed it, and the stock middleware answers 403, as documented.
 * An event that failed its check on arrival is never signed, whatever the flag.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnListen } from '../support/spawn-listen.ts';
import { twilioForm, webhooks } from '../../catalog/twilio/twilio.case.ts';
import { startListenWire, type ListenWire } from './support/listen-wire.ts';

const SERVER_TOKEN = 'twilio-auth-token-on-the-server';
const LAPTOP_TOKEN = 'twilio-auth-token-on-the-laptop';
const PUBLIC_URL = 'https://hooks.example.com/hooks/twilio';

// Only Twilio's webhooks module: the whole SDK is slow to import. webhook() is the stock middleware.
const require = createRequire(import.meta.url);
const { webhook } = require('twilio/lib/webhooks/webhooks.js') as {
  webhook: (authToken: string) => express.RequestHandler;
};

interface Arrival {
  signature: string | undefined;
  status: number;
  body: string;
}

/** An express app checking with twilio.webhook() and the laptop's token; records what it answered. */
async function startTwilioApp(): Promise<{ url: string; arrivals: Arrival[]; close(): Promise<void> }> {
  const arrivals: Arrival[] = [];
  const app = express();
  app.post(
    '/sms',
    (req, res, next) => {
      res.on('finish', () =>
        arrivals.push({
          signature: req.header('x-twilio-signature'),
          status: res.statusCode,
          body: new URLSearchParams(req.body as Record<string, string>).toString(),
        }),
      );
      next();
    },
    express.urlencoded({ extended: false }),
    webhook(LAPTOP_TOKEN),
    (_req, res) => {
      res.type('text/xml').send('<Response/>');
    },
  );
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sms`,
    arrivals,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let wire: ListenWire;
const token = `listen-sign-for-target-${randomUUID()}`;
let since: string;
let passed: Record<string, string>;
let forged: Record<string, string>;

beforeAll(async () => {
  wire = await startListenWire({
    token,
    config: [
      'providers:',
      `  twilio: { preset: twilio, secret: ${SERVER_TOKEN}, public_url: '${PUBLIC_URL}' }`,
      '',
    ].join('\n'),
  });
  since = new Date(Date.now() - 1000).toISOString();
  passed = twilioForm();
  forged = twilioForm();
  const send = (form: Record<string, string>, authToken: string): Promise<number> =>
    wire.post('/hooks/twilio', new URLSearchParams(form).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': webhooks.getExpectedTwilioSignature(authToken, PUBLIC_URL, form),
    });
  expect(await send(passed, SERVER_TOKEN)).toBe(200);
  expect(await send(forged, 'a-guessed-token')).toBe(401);
}, 60_000);

afterAll(async () => {
  await wire?.close();
});

/** listen from just before the two deliveries to the app, until both were answered; what the app saw. */
async function relay(flags: readonly string[]): Promise<Arrival[]> {
  const app = await startTwilioApp();
  wire.defer(() => app.close());
  const args = [wire.server, '--forward-to', app.url, '--since', since, '--include-unverified', '--max-attempts', '1'];
  const child = spawnListen([...args, ...flags], {
    SWITCHBOARD_TOKEN: token,
    XDG_STATE_HOME: await wire.stateDir(),
    SWITCHBOARD_SIGN_SECRET: LAPTOP_TOKEN,
  });
  wire.defer(async () => {
    await child.stop('SIGKILL');
  });
  await child.waitFor(/<-- \d{3}[\s\S]*<-- \d{3}/, 30_000);
  expect(child.stdout() + child.stderr()).not.toContain(SERVER_TOKEN);
  return app.arrivals;
}

const formOf = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

describe('switchboard listen --sign-for-target', () => {
  it("signs a Twilio delivery for the local app's URL, so twilio.webhook() accepts it; never signs one that failed", async () => {
    const [first, second] = await relay(['--sign-for-target']);
    expect(first).toMatchObject({ status: 200, body: formOf(passed) });
    expect(first?.signature).toBeDefined();
    // Trust is never laundered: the delivery that failed on arrival goes with no signature at all.
    expect(second).toEqual({ signature: undefined, status: 400, body: formOf(forged) });
  }, 60_000);

  it('without it, signs for public_url as Twilio did: the stock middleware answers 403', async () => {
    const [first, second] = await relay([]);
    expect(first).toMatchObject({ status: 403, body: formOf(passed) });
    expect(first?.signature).toBe(webhooks.getExpectedTwilioSignature(LAPTOP_TOKEN, PUBLIC_URL, passed));
    expect(second).toEqual({ signature: undefined, status: 400, body: formOf(forged) });
  }, 60_000);
});
