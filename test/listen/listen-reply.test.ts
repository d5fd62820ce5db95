/**
 * `switchboard listen --reply` (issue 39, "Through listen"): providers with reply: {from: listen}
 * wait while the delivery goes down the listen stream to the laptop's app, and get the app's
 * answer back through the one answer call (POST /api/replies/{id}). The apps are built on the
 * providers' own packages (discord-interactions, twilio); the test acts as Discord and Twilio.
 * Also: no listener (unavailable, fallback at once), no answer in time (timed_out), two listeners
 * (first wins, the second is late), a token that was not offered the delivery (refused) and a
 * second answer (409 conflict), the last three with the test as the listener on the raw API.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiReplyRequest, EventDetail } from '../../generated/types.ts';
import { validateApiReplyRequest, validateErrorEnvelope } from '../../generated/validators.js';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import { createTokenRepository } from '../../src/store/records/token-repository.ts';
import { startComposedServer } from '../support/composed-server.ts';
import { spawnListen, type ListenChild } from '../support/spawn-listen.ts';
import type { RecordedRequest } from '../support/local-server.ts';
import { discordBot, header } from '../support/reply-apps.ts';
import { discordCase, discordDelivery } from '../../catalog/discord/discord.case.ts';
import { twilioForm, webhooks } from '../../catalog/twilio/twilio.case.ts';
import { startListenWire, type ListenWire } from './support/listen-wire.ts';

const TOKEN = 'listen-reply-test-token-0123456789';
const TWILIO_SERVER_TOKEN = 'twilio-auth-token-on-the-server';
const TWILIO_LAPTOP_TOKEN = 'twilio-auth-token-on-the-laptop';
const TWILIO_PUBLIC_URL = 'https://hooks.example.com/hooks/twilio';
const DISCORD_FALLBACK = '{"type":4,"data":{"content":"The app did not answer in time. Please try again.","flags":64}}';

const CONFIG = [
  'providers:',
  `  discord: { preset: discord, public_key: "${discordCase.secret}", reply: { from: listen } }`,
  `  twilio: { preset: twilio, secret: ${TWILIO_SERVER_TOKEN}, public_url: "${TWILIO_PUBLIC_URL}", reply: { from: listen } }`,
  `  lonely: { preset: discord, public_key: "${discordCase.secret}", reply: { from: listen, timeout_ms: 2800 } }`,
  `  rawbot: { preset: discord, public_key: "${discordCase.secret}", reply: { from: listen, timeout_ms: 2000 } }`,
  `  slowbot: { preset: discord, public_key: "${discordCase.secret}", reply: { from: listen, timeout_ms: 300 } }`,
  '',
].join('\n');

interface TwilioPackage {
  webhook(token: string): express.RequestHandler;
  twiml: { MessagingResponse: new () => { message(text: string): void; toString(): string } };
}
const require = createRequire(import.meta.url);
const twilio = require('twilio') as TwilioPackage;

/** A Twilio number's app on express: twilio.webhook() with the laptop's token, then MessagingResponse. */
async function startSmsApp(): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.post('/sms', express.urlencoded({ extended: false }), twilio.webhook(TWILIO_LAPTOP_TOKEN), (req, res) => {
    const twiml = new twilio.twiml.MessagingResponse();
    twiml.message(`Got: ${String((req.body as Record<string, string>).Body)}`);
    res.type('text/xml').send(twiml.toString());
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sms`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The test as a listener on the raw API: GET /api/stream?reply=…, each reply request as it comes. */
async function openReplyStream(
  server: string,
  token: string,
  providers: string,
): Promise<{ next(): Promise<ApiReplyRequest>; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(`${server}/api/stream?reply=${providers}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  return {
    async next() {
      for (;;) {
        const match = /event: reply\ndata: (.*)\n\n/.exec(buffered);
        if (match !== null) {
          buffered = buffered.slice(match.index + match[0].length);
          const request: unknown = JSON.parse(match[1] ?? '');
          expect(validateApiReplyRequest(request)).toBe(true);
          return request as ApiReplyRequest;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        buffered += decoder.decode(value, { stream: true });
      }
    },
    close: () => abort.abort(),
  };
}

describe('switchboard listen --reply', () => {
  let wire: ListenWire;
  let smsApp: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    wire = await startListenWire({ token: TOKEN, config: CONFIG });
    smsApp = await startSmsApp();
    wire.defer(() => smsApp.close());
  }, 60_000);

  afterAll(async () => {
    await wire?.close();
  });

  const postDiscord = (route: string, payload?: object) => {
    const signed = discordDelivery(discordCase.secret, Date.now(), payload);
    return fetch(`${wire.server}/hooks/${route}`, { method: 'POST', body: signed.body, headers: signed.headers });
  };

  const api = async <T>(path: string, init: RequestInit = {}, token = TOKEN): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${wire.server}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
    });
    return { status: res.status, body: (await res.json()) as T };
  };

  /** The event's recorded reply, once written. */
  async function recordedReply(id: string): Promise<EventDetail['reply']> {
    for (let i = 0; i < 200; i++) {
      const { body } = await api<EventDetail>(`/api/events/${id}`);
      if (body.reply !== undefined) return body.reply;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`no reply recorded for ${id}`);
  }

  async function listenTo(provider: string, target: string, extra: readonly string[] = []): Promise<ListenChild> {
    const state = await wire.stateDir();
    const child = spawnListen([wire.server, '--forward-to', target, '--provider', provider, '--reply', ...extra], {
      SWITCHBOARD_TOKEN: TOKEN,
      XDG_STATE_HOME: state,
    });
    wire.defer(async () => void (await child.stop('SIGKILL')));
    await child.waitFor(/Ready!/);
    return child;
  }

  it('Discord: the interaction is answered with exactly the app JSON, the app checking it with verifyKey', async () => {
    const bot = await wire.consumer();
    // Bytes a terminal must never see raw: listen prints only the status.
    bot.handle(discordBot((command) => `laptop ran ${command} \u001b[31m`));
    const child = await listenTo('discord', bot.url('/interactions'));
    const res = await postDiscord('discord');
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(text).toBe('{"type":4,"data":{"content":"laptop ran deploy \\u001b[31m"}}');
    expect(bot.requests).toHaveLength(1);
    const eventId = header(bot.requests[0] as RecordedRequest, EVENT_ID_HEADER);
    expect(await recordedReply(eventId)).toMatchObject({ outcome: 'answered', response_status: 200 });
    await child.waitFor(/reply answered/);
    // A delivery that needs no answer is answered at once as before: Discord's PING by switchboard,
    // without waiting on the listener.
    const pingStarted = Date.now();
    const ping = await postDiscord('discord', { id: `${Date.now()}`, application_id: '1', type: 1, version: 1 });
    expect(await ping.json()).toEqual({ type: 1 });
    expect(Date.now() - pingStarted).toBeLessThan(1000);
    // Sent once: not again as an ordinary event, and the app's bytes never reach the terminal.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bot.requests).toHaveLength(1);
    expect(child.stdout() + child.stderr()).not.toContain('\u001b[31m');
    expect(child.stdout()).not.toContain('laptop ran');

    // A second listener: the first answer wins, the second is refused as late.
    const slow = await wire.consumer();
    slow.handle(discordBot((command) => `second ran ${command} \u001b[31m`, 300));
    const second = await listenTo('discord', slow.url('/interactions'));
    const again = await postDiscord('discord');
    expect(await again.text()).toBe('{"type":4,"data":{"content":"laptop ran deploy \\u001b[31m"}}');
    await second.waitFor(/reply late/);
    expect(slow.requests).toHaveLength(1);
    const metrics = await fetch(`${wire.server}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await metrics.text()).toMatch(/switchboard_reply_late_answers_total\{provider="discord"\} 1/);
  }, 60_000);

  it('Twilio: the SMS is answered with the app TwiML as text/xml, the app checking it with twilio.webhook()', async () => {
    const signSecret = join(await wire.stateDir(), 'secret');
    await writeFile(signSecret, TWILIO_LAPTOP_TOKEN);
    await listenTo('twilio', smsApp.url, ['--sign-for-target', '--sign-secret-file', signSecret]);
    const params = twilioForm();
    const res = await fetch(`${wire.server}/hooks/twilio`, {
      method: 'POST',
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'i-twilio-idempotency-token': randomUUID(),
        'x-twilio-signature': webhooks.getExpectedTwilioSignature(TWILIO_SERVER_TOKEN, TWILIO_PUBLIC_URL, params),
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/xml/);
    expect(await res.text()).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><Response><Message>Got: ${params.Body ?? ''}</Message></Response>`,
    );
  }, 60_000);

  it('no listener connected: the fallback at once, outcome unavailable', async () => {
    const started = Date.now();
    const res = await postDiscord('lonely');
    expect(await res.text()).toBe(DISCORD_FALLBACK);
    // At once, not after the 2.8 s wait: the margin is for a loaded CI machine.
    expect(Date.now() - started).toBeLessThan(2000);
    const { body: list } = await api<{ events: { id: string }[] }>('/api/events?provider=lonely');
    expect(await recordedReply(list.events[0]?.id ?? '')).toMatchObject({ outcome: 'unavailable' });
  });

  it('no answer in time: the fallback in time, outcome timed_out; an answer after that is late (409)', async () => {
    const stream = await openReplyStream(wire.server, TOKEN, 'slowbot');
    try {
      const started = Date.now();
      const pending = postDiscord('slowbot');
      const request = await stream.next();
      const res = await pending;
      expect(await res.text()).toBe(DISCORD_FALLBACK);
      expect(Date.now() - started).toBeLessThan(1500);
      expect(await recordedReply(request.event.id)).toMatchObject({ outcome: 'timed_out' });
      const late = await api<unknown>(`/api/replies/${request.reply_id}`, {
        method: 'POST',
        body: JSON.stringify({ status: 200, headers: {}, body_base64: '' }),
      });
      expect(late.status).toBe(409);
      expect(validateErrorEnvelope(late.body) && late.body.error.code).toBe('conflict');
    } finally {
      stream.close();
    }
  });

  it('the answer call: refused from a token that was not offered the delivery, taken once, a second answer 409', async () => {
    const { token: other } = await createTokenRepository(wire.composed.running.database.pool).create('other-laptop');
    const stream = await openReplyStream(wire.server, TOKEN, 'rawbot');
    try {
      const pending = postDiscord('rawbot');
      const request = await stream.next();
      const answer = {
        status: 200,
        headers: { 'content-type': 'application/json', 'set-cookie': 'a=b', connection: 'close' },
        body_base64: Buffer.from('{"type":4,"data":{"content":"raw"}}').toString('base64'),
      };
      const post = (token: string) =>
        api<unknown>(`/api/replies/${request.reply_id}`, { method: 'POST', body: JSON.stringify(answer) }, token);
      const refused = await post(other);
      expect(refused.status).toBe(403);
      expect(validateErrorEnvelope(refused.body) && refused.body.error.code).toBe('forbidden');
      const unauthenticated = await post('not-a-token');
      expect(unauthenticated.status).toBe(401);
      const taken = await post(TOKEN);
      expect(taken).toEqual({
        status: 200,
        body: { reply_id: request.reply_id, event_id: request.event.id, outcome: 'answered' },
      });
      const res = await pending;
      expect(await res.text()).toBe('{"type":4,"data":{"content":"raw"}}');
      expect(res.headers.get('set-cookie')).toBeNull();
      const twice = await post(TOKEN);
      expect(twice.status).toBe(409);
      expect(validateErrorEnvelope(twice.body) && twice.body.error.code).toBe('conflict');
      const bad = await api<unknown>(`/api/replies/${request.reply_id}`, {
        method: 'POST',
        body: JSON.stringify({ status: 200 }),
      });
      expect(bad.status).toBe(400);
    } finally {
      stream.close();
    }
  });

  it('two instances on one database: only reply streams on the instance holding the request are offered it', async () => {
    const other = await startComposedServer({
      envToken: TOKEN,
      config: CONFIG,
      database: { url: wire.composed.databaseUrl },
    });
    const stream = await openReplyStream(other.url, TOKEN, 'lonely');
    try {
      // Held by this instance, with the only reply stream on the other: nobody is offered it.
      const res = await postDiscord('lonely');
      expect(await res.text()).toBe(DISCORD_FALLBACK);
      const { body: list } = await api<{ events: { id: string }[] }>('/api/events?provider=lonely');
      expect(await recordedReply(list.events[0]?.id ?? '')).toMatchObject({ outcome: 'unavailable' });
      // Held by the other instance: its stream is offered it, and only there is the answer taken.
      const signed = discordDelivery(discordCase.secret, Date.now());
      const pending = fetch(`${other.url}/hooks/lonely`, {
        method: 'POST',
        body: signed.body,
        headers: signed.headers,
      });
      const request = await stream.next();
      const answer = JSON.stringify({ status: 200, headers: { 'content-type': 'application/json' }, body_base64: '' });
      const here = await api<unknown>(`/api/replies/${request.reply_id}`, { method: 'POST', body: answer });
      expect(here.status).toBe(404);
      const there = await fetch(`${other.url}/api/replies/${request.reply_id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: answer,
      });
      expect(there.status).toBe(200);
      expect((await pending).status).toBe(200);
    } finally {
      stream.close();
      await other.close();
    }
  }, 60_000);
});
