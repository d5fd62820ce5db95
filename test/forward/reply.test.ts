/**
 * Providers that wait for the app's reply (config: reply): the composed server on 127.0.0.1 holds
 * the provider's request, sends the event to the reply rule's target, an app on 127.0.0.1 built on
 * the provider's own package, and passes its answer back. Deliveries are signed as the providers
 * sign them; the apps check them with discord-interactions, twilio and @slack/bolt.
 */
import { createRequire } from 'node:module';
import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { isValidSlackRequest } from '@slack/bolt';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventDetail } from '../../generated/types.ts';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import { closedPort, startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { discordBot, header } from '../support/reply-apps.ts';
import { discordCase, discordDelivery } from '../../catalog/discord/discord.case.ts';
import { hmac } from '../verify/providers/provider-case.ts';
import { TWILIO_URL, twilioForm, webhooks } from '../../catalog/twilio/twilio.case.ts';
import { callOk } from '../mcp/support/tool-calls.ts';
import { eventually, startForwardServer, TOKEN, type ForwardServer } from './forward-kit.ts';

interface TwilioPackage {
  webhook(token: string, options: { url: string }): (req: object, res: object, next: () => void) => void;
  twiml: { MessagingResponse: new () => { message(text: string): void; toString(): string } };
}
const require = createRequire(import.meta.url);
const twilio = require('twilio') as TwilioPackage;

const TWILIO_TOKEN = '0123456789abcdef0123456789abcdef';
const SLACK_SECRET = 'slack-reply-signing-secret';

/**
 * A Twilio number's app: twilio.webhook() checks the signature against the URL Twilio called
 * (given as its url option: the app is not reached at that URL), then MessagingResponse answers.
 */
function smsApp(req: RecordedRequest, res: ServerResponse): void {
  const expressLike = {
    ...req,
    body: Object.fromEntries(new URLSearchParams(req.body.toString('utf8'))),
    header: (name: string) => header(req, name.toLowerCase()),
  };
  const reply = {
    type: (type: string) => {
      res.setHeader('content-type', type);
      return reply;
    },
    status: (status: number) => {
      res.statusCode = status;
      return reply;
    },
    send: (text: string) => res.end(text),
  };
  twilio.webhook(TWILIO_TOKEN, { url: TWILIO_URL })(expressLike, reply, () => {
    const twiml = new twilio.twiml.MessagingResponse();
    twiml.message(`Got: ${expressLike.body.Body ?? ''}`);
    res.setHeader('content-type', 'text/xml');
    res.end(twiml.toString());
  });
}

/** A Slack app answering a slash command in-band, after Slack's own check (@slack/bolt). */
function slackApp(req: RecordedRequest, res: ServerResponse): void {
  const valid = isValidSlackRequest({
    signingSecret: SLACK_SECRET,
    body: req.body.toString('utf8'),
    headers: {
      'x-slack-signature': header(req, 'x-slack-signature'),
      'x-slack-request-timestamp': Number(header(req, 'x-slack-request-timestamp')),
    },
  });
  res.statusCode = valid ? 200 : 401;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ response_type: 'in_channel', text: valid ? 'Deploying now' : 'bad signature' }));
}

function slackCommand(): { body: string; headers: Record<string, string> } {
  const body = new URLSearchParams({
    token: 'legacy',
    team_id: 'T1DC2JH3J',
    command: '/deploy',
    text: 'production',
    user_id: 'U2CERLKJA',
    trigger_id: `398738663015.47445629121.${randomUUID().replaceAll('-', '')}`,
  }).toString();
  const ts = String(Math.floor(Date.now() / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': `v0=${hmac('sha256', SLACK_SECRET, [`v0:${ts}:`, body], 'hex')}`,
    },
  };
}

describe('providers that wait for the app reply get its answer', () => {
  let server: ForwardServer;
  let bot: Consumer;
  let sms: Consumer;
  let slack: Consumer;
  let slow: Consumer;

  beforeAll(async () => {
    [bot, sms, slack, slow] = await Promise.all([startConsumer(), startConsumer(), startConsumer(), startConsumer()]);
    bot.handle(discordBot((command) => `ran ${command}`));
    sms.handle(smsApp);
    slack.handle(slackApp);
    slow.handle((_req, res) => {
      setTimeout(() => res.end('{"type":4,"data":{"content":"too late"}}'), 1500);
    });
    const gone = await closedPort();
    server = await startForwardServer(
      [
        'providers:',
        `  discord: { preset: discord, public_key: "${discordCase.secret}", reply: { from: bot } }`,
        `  slowbot: { preset: discord, public_key: "${discordCase.secret}", reply: { from: slow, timeout_ms: 400 } }`,
        `  awaybot: { preset: discord, public_key: "${discordCase.secret}", reply: { from: away } }`,
        `  twilio: { preset: twilio, secret: ${TWILIO_TOKEN}, public_url: "${TWILIO_URL}", reply: { from: sms } }`,
        `  slack: { preset: slack, secret: ${SLACK_SECRET}, reply: { from: slackapp } }`,
        'forward:',
        `  bot: { to: "${bot.url('/interactions')}", providers: [discord] }`,
        `  slow: { to: "${slow.url('/interactions')}", providers: [slowbot] }`,
        `  away: { to: "http://127.0.0.1:${gone}/interactions", providers: [awaybot] }`,
        `  sms: { to: "${sms.url('/sms')}", providers: [twilio] }`,
        `  slackapp: { to: "${slack.url('/slack')}", providers: [slack] }`,
        '',
      ].join('\n'),
    );
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await Promise.all([bot, sms, slack, slow].map((c) => c?.close()));
  });

  const postDiscord = (route: string, payload?: object) => {
    const signed = discordDelivery(discordCase.secret, Date.now(), payload);
    return fetch(`${server.url}/hooks/${route}`, {
      method: 'POST',
      body: signed.body,
      headers: signed.headers,
    });
  };

  const eventDetail = async (id: string): Promise<EventDetail> =>
    (await server.api<EventDetail>(`/api/events/${id}`)).body;

  /** The event's recorded reply, once the reply service has written it. */
  const recordedReply = (id: string) =>
    eventually(async () => (await eventDetail(id)).reply, `the reply of event ${id} to be recorded`);

  it('Discord: the interaction is answered with exactly the app JSON, which verified it with discord-interactions; sent once', async () => {
    const before = bot.requests.length;
    const res = await postDiscord('discord');
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(text).toBe('{"type":4,"data":{"content":"ran deploy"}}');
    const sent = bot.requests.slice(before);
    expect(sent).toHaveLength(1);
    const eventId = header(sent[0] as RecordedRequest, EVENT_ID_HEADER);
    const reply = await recordedReply(eventId);
    expect(reply).toMatchObject({ outcome: 'answered', response_status: 200 });
    const [delivery] = await eventually(async () => {
      const rows = await server.deliveries(eventId);
      return rows[0]?.state === 'delivered' ? rows : undefined;
    }, 'the reply delivery to be settled');
    expect(delivery).toMatchObject({ rule: 'bot', state: 'delivered', attempt_count: 1 });
    // The outbox does not send the interaction a second time.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(bot.requests.length - before).toBe(1);
  });

  it('Discord: PING is still answered by switchboard, and the app receives nothing', async () => {
    const before = bot.requests.length;
    const res = await postDiscord('discord', { id: '1', application_id: '2', type: 1, version: 1 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
    expect(bot.requests.length).toBe(before);
  });

  it('Discord: a forged interaction is answered 401 and never reaches the app', async () => {
    const before = bot.requests.length;
    const signed = discordDelivery(discordCase.secret, Date.now());
    const forged = JSON.stringify({ ...JSON.parse(signed.body.toString('utf8')), data: { name: 'drop-db' } });
    const res = await fetch(`${server.url}/hooks/discord`, { method: 'POST', body: forged, headers: signed.headers });
    expect(res.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bot.requests.length).toBe(before);
  });

  it('Twilio: the SMS is answered with the app TwiML as text/xml, the app checking it with twilio.webhook()', async () => {
    const params = twilioForm();
    const res = await fetch(`${server.url}/hooks/twilio`, {
      method: 'POST',
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'i-twilio-idempotency-token': randomUUID(),
        'x-twilio-signature': webhooks.getExpectedTwilioSignature(TWILIO_TOKEN, TWILIO_URL, params),
      },
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/xml');
    expect(text).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><Response><Message>Got: ${params.Body ?? ''}</Message></Response>`,
    );
  });

  it('Slack: a slash command is answered in-band with the app message, the app checking Slack signature', async () => {
    const command = slackCommand();
    const res = await fetch(`${server.url}/hooks/slack`, { method: 'POST', ...command });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ response_type: 'in_channel', text: 'Deploying now' });
  });

  it('Slack: an Events API delivery keeps its immediate answer and is forwarded as usual', async () => {
    const body = JSON.stringify({
      type: 'event_callback',
      event_id: `Ev${Date.now()}`,
      event: { type: 'app_mention' },
    });
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await fetch(`${server.url}/hooks/slack`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${hmac('sha256', SLACK_SECRET, [`v0:${ts}:`, body], 'hex')}`,
      },
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    await eventually(async () => (await server.deliveries(id))[0]?.state === 'delivered', 'the event to be forwarded');
    expect((await eventDetail(id)).reply).toBeUndefined();
  });

  it('Timeout: an app that sleeps past the wait gets the provider the fallback in time; stored, timed_out', async () => {
    const before = slow.requests.length;
    const started = Date.now();
    const res = await postDiscord('slowbot');
    const elapsed = Date.now() - started;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(PROVIDER_CATALOG.discord.reply?.fallback.body);
    expect(elapsed).toBeGreaterThanOrEqual(400);
    expect(elapsed).toBeLessThan(PROVIDER_CATALOG.discord.reply?.deadline_ms ?? 0);
    const eventId = header(slow.requests[before] as RecordedRequest, EVENT_ID_HEADER);
    expect(await recordedReply(eventId)).toMatchObject({ outcome: 'timed_out' });
    expect((await eventDetail(eventId)).event_type).toBe('command.deploy');
    const [delivery] = await eventually(async () => {
      const rows = await server.deliveries(eventId);
      return rows[0]?.state === 'dead' ? rows : undefined;
    }, 'the timed-out reply to be dead, not retried');
    expect(delivery?.attempt_count).toBe(1);
  });

  it("A provider that waited shows the app's reply: get_webhook_event carries it, an event that did not wait has none", async () => {
    const mcp = new Client({ name: 'switchboard-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const before = bot.requests.length;
      expect((await postDiscord('discord')).status).toBe(200);
      const eventId = header(bot.requests[before] as RecordedRequest, EVENT_ID_HEADER);
      await recordedReply(eventId);
      const detail = await callOk<EventDetail>(mcp, 'get_webhook_event', { id: eventId });
      expect(detail.reply).toEqual({ outcome: 'answered', response_status: 200, response_ms: expect.any(Number) });
      const ping = await postDiscord('discord', { id: '3', application_id: '2', type: 1, version: 1 });
      expect(ping.status).toBe(200);
      const page = await callOk<{ events: Array<{ id: string; event_type: string }> }>(mcp, 'list_webhook_events', {
        provider: 'discord',
        limit: 1,
      });
      const [latest] = page.events;
      expect(latest?.event_type).not.toBe('command.deploy');
      const handshake = await callOk<EventDetail>(mcp, 'get_webhook_event', { id: latest?.id });
      expect(handshake.reply).toBeUndefined();
    } finally {
      await mcp.close();
    }
  });

  it('Unavailable: a target that refuses the connection gets the provider the fallback; stored, unavailable', async () => {
    const signed = discordDelivery(discordCase.secret, Date.now());
    const res = await fetch(`${server.url}/hooks/awaybot`, {
      method: 'POST',
      body: signed.body,
      headers: signed.headers,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe(PROVIDER_CATALOG.discord.reply?.fallback.body);
    const page = await server.api<{ events: Array<{ id: string }> }>('/api/events?provider=awaybot');
    const id = page.body.events[0]?.id ?? '';
    expect(await recordedReply(id)).toMatchObject({ outcome: 'unavailable' });
  });
});
