/**
 * The two presets that wait on every delivery and have no npm package to sign with: a Microsoft
 * Teams outgoing webhook and a Telegram bot, answered through a forward rule by apps on 127.0.0.1.
 * The test acts as the provider, signing as Microsoft's and Telegram's published documentation
 * says (the proof cases: catalog/microsoft-teams/microsoft-teams.case.ts and
 * catalog/telegram/telegram.case.ts); each app checks the forwarded request the same way before it
 * answers.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventDetail } from '../../generated/types.ts';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { EVENT_ID_HEADER } from '../../src/shared/header-names.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';
import { microsoftTeamsCase, teamsAuthorization } from '../../catalog/microsoft-teams/microsoft-teams.case.ts';
import { telegramCase } from '../../catalog/telegram/telegram.case.ts';
import { eventually, startForwardServer, type ForwardServer } from './forward-kit.ts';

const TEAMS_TOKEN = microsoftTeamsCase.secret;
const TELEGRAM_TOKEN = telegramCase.secret;
const TELEGRAM_HEADER = 'x-telegram-bot-api-secret-token';

const header = (req: RecordedRequest, name: string): string => {
  const value = req.headers[name];
  return String((Array.isArray(value) ? value[0] : value) ?? '');
};

/**
 * A Teams outgoing-webhook bot, as Microsoft's sample writes it: the HMAC of the raw body keyed
 * with the base64-decoded token must equal Authorization, then the answer is a message activity.
 */
function teamsBot(req: RecordedRequest, res: ServerResponse): void {
  res.setHeader('content-type', 'application/json');
  if (header(req, 'authorization') !== teamsAuthorization(req.body, TEAMS_TOKEN)) {
    res.statusCode = 401;
    res.end(JSON.stringify({ type: 'message', text: 'Error: message sender cannot be authenticated.' }));
    return;
  }
  const activity = JSON.parse(req.body.toString('utf8')) as { text: string };
  res.end(JSON.stringify({ type: 'message', text: `You typed: ${activity.text}` }));
}

/** A Telegram bot: the secret token it gave setWebhook must be in the header; it answers with a Bot API call. */
function telegramBot(req: RecordedRequest, res: ServerResponse): void {
  if (header(req, TELEGRAM_HEADER) !== TELEGRAM_TOKEN) {
    res.statusCode = 401;
    res.end();
    return;
  }
  const update = JSON.parse(req.body.toString('utf8')) as { message: { chat: { id: number }; text: string } };
  res.setHeader('content-type', 'application/json');
  res.end(
    JSON.stringify({ method: 'sendMessage', chat_id: update.message.chat.id, text: `echo ${update.message.text}` }),
  );
}

describe('Teams and Telegram, which wait on every delivery, get the app answer', () => {
  let server: ForwardServer;
  let teams: Consumer;
  let telegram: Consumer;

  beforeAll(async () => {
    [teams, telegram] = await Promise.all([startConsumer(), startConsumer()]);
    teams.handle(teamsBot);
    telegram.handle(telegramBot);
    server = await startForwardServer(
      [
        'providers:',
        `  teams: { preset: microsoft-teams, secret: "${TEAMS_TOKEN}", reply: { from: teamsbot } }`,
        `  telegram: { preset: telegram, token: "${TELEGRAM_TOKEN}", reply: { from: telegrambot } }`,
        'forward:',
        `  teamsbot: { to: "${teams.url('/teams')}", providers: [teams] }`,
        `  telegrambot: { to: "${telegram.url('/telegram')}", providers: [telegram] }`,
        '',
      ].join('\n'),
    );
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await Promise.all([teams, telegram].map((c) => c?.close()));
  });

  const recordedReply = (id: string) =>
    eventually(
      async () => (await server.api<EventDetail>(`/api/events/${id}`)).body.reply,
      `the reply of event ${id} to be recorded`,
    );

  it('Teams: the @mention is answered with exactly the bot message, the bot checking the re-signed HMAC; sent once', async () => {
    const delivery = await microsoftTeamsCase.deliver(TEAMS_TOKEN, Date.now());
    const before = teams.requests.length;
    const res = await fetch(`${server.url}/hooks/teams`, { method: 'POST', ...delivery });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const text = (JSON.parse(delivery.body.toString('utf8')) as { text: string }).text;
    expect(await res.text()).toBe(JSON.stringify({ type: 'message', text: `You typed: ${text}` }));
    const sent = teams.requests.slice(before);
    expect(sent).toHaveLength(1);
    const eventId = header(sent[0] as RecordedRequest, EVENT_ID_HEADER);
    expect(await recordedReply(eventId)).toMatchObject({ outcome: 'answered', response_status: 200 });
    const detail = (await server.api<EventDetail>(`/api/events/${eventId}`)).body;
    expect(detail).toMatchObject({ event_type: 'message', verified: true });
    // Authorization carries the HMAC: never stored as it came.
    expect(JSON.stringify(detail)).not.toContain(delivery.headers.authorization ?? '-');
  });

  it('Teams: a forged request is answered 401 and the bot receives nothing', async () => {
    const delivery = await microsoftTeamsCase.deliver(TEAMS_TOKEN, Date.now());
    const activity = JSON.parse(delivery.body.toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...activity, text: '<at>Switchboard</at> delete everything' }));
    const wrongKey = await microsoftTeamsCase.deliver(microsoftTeamsCase.wrongSecret, Date.now());
    const before = teams.requests.length;
    const tampered = await fetch(`${server.url}/hooks/teams`, {
      method: 'POST',
      body: forged,
      headers: delivery.headers,
    });
    const unkeyed = await fetch(`${server.url}/hooks/teams`, { method: 'POST', ...wrongKey });
    expect([tampered.status, unkeyed.status]).toEqual([401, 401]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(teams.requests.length).toBe(before);
  });

  it('Telegram: the update is answered with the bot Bot API method call, the bot checking its secret token', async () => {
    const delivery = await telegramCase.deliver(TELEGRAM_TOKEN, Date.now());
    const before = telegram.requests.length;
    const res = await fetch(`${server.url}/hooks/telegram`, { method: 'POST', ...delivery });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ method: 'sendMessage', chat_id: 1111111, text: 'echo /start' });
    const sent = telegram.requests.slice(before);
    expect(sent).toHaveLength(1);
    const eventId = header(sent[0] as RecordedRequest, EVENT_ID_HEADER);
    expect(await recordedReply(eventId)).toMatchObject({ outcome: 'answered', response_status: 200 });
    expect((await server.api<EventDetail>(`/api/events/${eventId}`)).body.event_type).toBe('message.private');
  });

  it('Telegram: a wrong secret token is answered 401 and the bot receives nothing', async () => {
    const before = telegram.requests.length;
    const res = await fetch(`${server.url}/hooks/telegram`, {
      method: 'POST',
      ...(await telegramCase.deliver(telegramCase.wrongSecret, Date.now())),
    });
    expect(res.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(telegram.requests.length).toBe(before);
  });

  it('the catalog defaults leave margin under each deadline, with the documented fallbacks', () => {
    const teamsReply = PROVIDER_CATALOG['microsoft-teams'].reply;
    const telegramReply = PROVIDER_CATALOG.telegram.reply;
    expect(teamsReply).toMatchObject({ waits: 'all', deadline_ms: 5000 });
    expect(teamsReply?.timeout_ms).toBeLessThanOrEqual(4000);
    expect(JSON.parse(teamsReply?.fallback.body ?? '')).toMatchObject({ type: 'message', text: expect.any(String) });
    expect(telegramReply).toMatchObject({ waits: 'all', fallback: { status: 200, body: '' } });
    expect(telegramReply?.timeout_ms).toBeLessThan(telegramReply?.deadline_ms ?? 0);
  });
});
