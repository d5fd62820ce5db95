/**
 * Every registration handshake on the wire (one composed server on 127.0.0.1): Discord's PING,
 * Zoom's endpoint.url_validation, Twitch's webhook_callback_verification, Slack's url_verification
 * (each signed, answered only after its check passed), Meta's GET subscribe with its verify token
 * and Dropbox's GET challenge. Each answered handshake is stored as an event whose type names it,
 * and a forward rule that takes every event of these providers skips it, as `switchboard listen`
 * does (it asks the server, which decides with the same functions); every other GET is 405.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../forward/forward-kit.ts';
import { discordCase, discordDelivery } from '../../catalog/discord/discord.case.ts';
import { hmac } from '../verify/providers/provider-case.ts';
import { isoSeconds } from '../verify/providers/timed-case.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { startConsumer, type Consumer } from '../support/local-server.ts';
import { spawnListen } from '../support/spawn-listen.ts';

const TOKEN = 'handshake-test-token-0123456789abcdef';
const ZOOM_SECRET = 'zoom-secret-token-handshake';
const ZOOM_OLD_SECRET = 'zoom-secret-token-previous';
const TWITCH_SECRET = 'twitch-eventsub-handshake-secret';
const SLACK_SECRET = 'slack-handshake-signing-secret';
const META_SECRET = 'meta-app-secret-handshake';
const META_VERIFY_TOKEN = 'meta-verify-token-chosen-by-operator';
const DROPBOX_SECRET = 'dropbox-app-secret-handshake';

interface StoredEvent {
  id: string;
  event_type: string;
  verified: boolean;
}

describe('registration handshakes', () => {
  const since = new Date(Date.now() - 1000).toISOString();
  let server: ComposedServer;
  let consumer: Consumer;
  let url: string;

  beforeAll(async () => {
    consumer = await startConsumer();
    server = await startComposedServer({
      envToken: TOKEN,
      config: [
        'providers:',
        `  discord: { preset: discord, public_key: "${discordCase.secret}" }`,
        `  zoom: { preset: zoom, secret: ["${ZOOM_OLD_SECRET}", "${ZOOM_SECRET}"] }`,
        `  twitch: { preset: twitch, secret: "${TWITCH_SECRET}" }`,
        `  slack: { preset: slack, secret: "${SLACK_SECRET}" }`,
        `  meta: { preset: meta, secret: "${META_SECRET}", verify_token: "${META_VERIFY_TOKEN}" }`,
        `  dropbox: { preset: dropbox, secret: "${DROPBOX_SECRET}" }`,
        `  github: { preset: github, secret: gh-handshake-secret }`,
        'forward:',
        `  everything: { to: "${consumer.url()}", include_unverified: true }`,
        '',
      ].join('\n'),
    });
    url = server.running.url;
  });

  afterAll(async () => {
    await server?.close();
    await consumer?.close();
  });

  const post = (route: string, body: Buffer, headers: Record<string, string>) =>
    fetch(`${url}/hooks/${route}`, {
      method: 'POST',
      body: new Uint8Array(body),
      headers: { 'content-type': 'application/json', ...headers },
    });

  async function latest(provider: string): Promise<StoredEvent | undefined> {
    const res = await fetch(`${url}/api/events?provider=${provider}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return ((await res.json()) as { events: StoredEvent[] }).events[0];
  }

  /** The handshake is stored with a type naming it, and the forward rule that takes everything skips it. */
  async function storedNotForwarded(provider: string, eventType: string): Promise<StoredEvent> {
    const event = await latest(provider);
    expect(event?.event_type).toBe(eventType);
    const id = event?.id ?? '';
    const res = await fetch(`${url}/api/events/${id}/deliveries`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await res.json()) as { deliveries: unknown[] }).deliveries).toEqual([]);
    expect(consumer.requests.some((r) => r.headers['x-switchboard-replay'] === id)).toBe(false);
    return event as StoredEvent;
  }

  it('discord: a signed type 1 PING gets {"type":1}; an unsigned one is 401 and not answered', async () => {
    const ping = discordDelivery(discordCase.secret, Date.now(), {
      id: randomUUID(),
      type: 1,
      application_id: '1',
      version: 1,
    });
    const res = await post('discord', ping.body, ping.headers);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
    expect(await storedNotForwarded('discord', 'ping')).toMatchObject({ verified: true });

    const forged = discordDelivery(discordCase.wrongSecret, Date.now(), { id: randomUUID(), type: 1 });
    const refused = await post('discord', forged.body, forged.headers);
    expect(refused.status).toBe(401);
    expect(await refused.text()).not.toContain('"type":1}');
  });

  it('zoom: endpoint.url_validation gets plainToken and its HMAC-SHA256 hex with the secret it was signed with', async () => {
    const plainToken = `qgg8vlvZRS6UYooatFL8Aw-${randomUUID()}`;
    const body = Buffer.from(
      JSON.stringify({ payload: { plainToken }, event_ts: Date.now(), event: 'endpoint.url_validation' }),
    );
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await post('zoom', body, {
      'x-zm-request-timestamp': ts,
      'x-zm-signature': `v0=${hmac('sha256', ZOOM_SECRET, [`v0:${ts}:`, body], 'hex')}`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      plainToken,
      encryptedToken: createHmac('sha256', ZOOM_SECRET).update(plainToken).digest('hex'),
    });
    await storedNotForwarded('zoom', 'endpoint.url_validation');

    const unsigned = await post('zoom', body, {
      'x-zm-request-timestamp': ts,
      'x-zm-signature': `v0=${hmac('sha256', 'not-the-secret', [`v0:${ts}:`, body], 'hex')}`,
    });
    expect(unsigned.status).toBe(401);
  });

  it('twitch: webhook_callback_verification gets 200 with the challenge as text/plain', async () => {
    const challenge = `pogchamp-kappa-360noscope-${randomUUID()}`;
    const body = Buffer.from(
      JSON.stringify({
        challenge,
        subscription: {
          id: randomUUID(),
          status: 'webhook_callback_verification_pending',
          type: 'channel.follow',
          version: '2',
        },
      }),
    );
    const id = randomUUID();
    const ts = isoSeconds(Date.now()).replace('Z', '.123456789Z');
    const res = await post('twitch', body, {
      'twitch-eventsub-message-id': id,
      'twitch-eventsub-message-timestamp': ts,
      'twitch-eventsub-message-type': 'webhook_callback_verification',
      'twitch-eventsub-message-signature': `sha256=${hmac('sha256', TWITCH_SECRET, [id, ts, body], 'hex')}`,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe(challenge);
    await storedNotForwarded('twitch', 'webhook_callback_verification');
  });

  it('slack: a signed url_verification gets its challenge and is stored as url_verification', async () => {
    const challenge = `3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P-${randomUUID()}`;
    const body = Buffer.from(
      JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' }),
    );
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await post('slack', body, {
      'x-slack-request-timestamp': ts,
      'x-slack-signature': `v0=${hmac('sha256', SLACK_SECRET, [`v0:${ts}:`, body], 'hex')}`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge });
    await storedNotForwarded('slack', 'url_verification');
  });

  it('meta: GET hub.mode=subscribe gets the challenge when verify_token matches, else 403', async () => {
    const challenge = `1158201444-${randomUUID()}`;
    const query = (token: string) =>
      `hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=${challenge}`;
    const res = await fetch(`${url}/hooks/meta?${query(META_VERIFY_TOKEN)}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(challenge);
    const event = await storedNotForwarded('meta', 'hub.subscribe');
    expect(event.verified).toBe(false);
    // The verify token never reaches storage: the stored query has it redacted.
    const detail = await fetch(`${url}/api/events/${event.id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await detail.text()).not.toContain(META_VERIFY_TOKEN);

    const wrong = await fetch(`${url}/hooks/meta?${query('a-guess')}`);
    expect(wrong.status).toBe(403);
    expect(await wrong.text()).not.toContain(challenge);
    expect((await fetch(`${url}/hooks/meta`)).status).toBe(405);
  });

  it('dropbox: GET ?challenge= gets the challenge as text/plain with nosniff', async () => {
    const challenge = `dropbox-challenge-${randomUUID()}`;
    const res = await fetch(`${url}/hooks/dropbox?challenge=${challenge}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe(challenge);
    await storedNotForwarded('dropbox', 'challenge');
    expect((await fetch(`${url}/hooks/dropbox`)).status).toBe(405);
  });

  it('every other GET on a webhook route stays 405, and ordinary deliveries are still forwarded', async () => {
    for (const route of ['github', 'zoom', 'twitch', 'discord', 'slack']) {
      const res = await fetch(`${url}/hooks/${route}?challenge=x&hub.mode=subscribe&hub.challenge=x`);
      expect(res.status, route).toBe(405);
    }
    const body = Buffer.from(
      JSON.stringify({ list_folder: { accounts: ['dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc'] } }),
    );
    const res = await post('dropbox', body, { 'x-dropbox-signature': hmac('sha256', DROPBOX_SECRET, [body], 'hex') });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    await eventually(
      () => consumer.requests.some((r) => r.headers['x-switchboard-replay'] === id),
      'the forwarded event',
    );
  });

  it('switchboard listen skips every handshake too, even with --include-unverified, and sends the rest', async () => {
    const res = await fetch(`${url}/api/events?order=oldest_first&limit=100`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const stored = ((await res.json()) as { events: StoredEvent[] }).events;
    // What the forward rule skipped: the events it made no delivery for.
    const skippedByForwarding: string[] = [];
    for (const event of stored) {
      const deliveries = await fetch(`${url}/api/events/${event.id}/deliveries`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      if (((await deliveries.json()) as { deliveries: unknown[] }).deliveries.length === 0)
        skippedByForwarding.push(event.id);
    }
    const handshakeTypes = ['ping', 'endpoint.url_validation', 'webhook_callback_verification', 'url_verification'];
    expect(new Set(stored.filter((e) => skippedByForwarding.includes(e.id)).map((e) => e.event_type))).toEqual(
      new Set([...handshakeTypes, 'hub.subscribe', 'challenge']),
    );

    const local = await startConsumer();
    const state = await mkdtemp(join(tmpdir(), 'sb-handshake-listen-'));
    const child = spawnListen([url, '--forward-to', local.url(), '--since', since, '--include-unverified'], {
      SWITCHBOARD_TOKEN: TOKEN,
      XDG_STATE_HOME: state,
    });
    try {
      const rest = stored.length - skippedByForwarding.length;
      await eventually(() => local.requests.length >= rest, `the ${rest} events that are not handshakes`);
      await child.waitFor(new RegExp(`(skipped: it is a registration handshake[^]*){${skippedByForwarding.length}}`));
      const sent = local.requests.map((r) => r.headers['x-switchboard-replay']);
      expect(sent).toEqual(stored.filter((e) => !skippedByForwarding.includes(e.id)).map((e) => e.id));
      expect(child.stdout().match(/skipped: it is a registration handshake/g)).toHaveLength(skippedByForwarding.length);
    } finally {
      await child.stop('SIGKILL');
      await local.close();
      await rm(state, { recursive: true, force: true });
    }
  }, 60_000);
});
