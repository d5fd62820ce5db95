/**
 * Asymmetric presets on the way out: switchboard holds only the provider's public key, so replay,
 * forwarding and the replay headers listen builds on carry the event's ORIGINAL signature headers,
 * and only for an event that passed its check on arrival. The consumer checks them with the
 * provider's own package (discord-interactions, @sendgrid/eventwebhook). One composed server on
 * 127.0.0.1, consumers on 127.0.0.1.
 */
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EventWebhook } from '@sendgrid/eventwebhook';
import { verifyKey } from 'discord-interactions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiReplayHeaders, ReplayResult } from '../../generated/types.ts';
import { originalCredentials } from '../../src/listen/local-signer.ts';
import { eventually } from '../forward/forward-kit.ts';
import { callOk } from '../mcp/support/tool-calls.ts';
import { discordCase } from '../../catalog/discord/discord.case.ts';
import { sendgridCase } from '../../catalog/sendgrid/sendgrid.case.ts';
import type { Signed } from '../verify/providers/provider-case.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';

const TOKEN = 'original-signature-test-token-0123456789';

/** A Standard Webhooks v1a signer: Ed25519 over `{id}.{timestamp}.{body}`, the key published as whpk_. */
const SVIX_KEY = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { privateKey, publicKey, whpk: `whpk_${raw.toString('base64')}` };
})();

function v1aDelivery(): Signed {
  const body = Buffer.from(JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_v1a' } }));
  const id = `msg_${Date.now()}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = sign(null, Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]), SVIX_KEY.privateKey);
  return {
    body,
    headers: { 'svix-id': id, 'svix-timestamp': timestamp, 'svix-signature': `v1a,${signature.toString('base64')}` },
  };
}

const header = (req: RecordedRequest | undefined, name: string): string =>
  String((Array.isArray(req?.headers[name]) ? req?.headers[name][0] : req?.headers[name]) ?? '');

/** What a Discord app does with a request: discord-interactions' verifyKey with the public key. */
const discordAccepts = (req: RecordedRequest | undefined): Promise<boolean> =>
  verifyKey(
    req?.body ?? Buffer.alloc(0),
    header(req, 'x-signature-ed25519'),
    header(req, 'x-signature-timestamp'),
    discordCase.secret,
  );

const sendgrid = new EventWebhook();
const sendgridAccepts = (req: RecordedRequest | undefined): boolean =>
  sendgrid.verifySignature(
    sendgrid.convertPublicKeyToECDSA(sendgridCase.secret),
    req?.body ?? Buffer.alloc(0),
    header(req, 'x-twilio-email-event-webhook-signature'),
    header(req, 'x-twilio-email-event-webhook-timestamp'),
  );

describe('asymmetric presets are re-sent with their original signature headers', () => {
  let server: ComposedServer;
  let forwarded: Consumer;
  let everything: Consumer;
  let target: Consumer;
  let url: string;
  let mcp: Client;

  beforeAll(async () => {
    [forwarded, everything, target] = await Promise.all([startConsumer(), startConsumer(), startConsumer()]);
    server = await startComposedServer({
      envToken: TOKEN,
      config: [
        'providers:',
        `  discord: { preset: discord, public_key: "${discordCase.secret}" }`,
        `  sendgrid: { preset: sendgrid, public_key: "${sendgridCase.secret}" }`,
        `  svix: { preset: svix, public_key: "${SVIX_KEY.whpk}" }`,
        'forward:',
        `  app: { to: "${forwarded.url()}", providers: [discord, sendgrid] }`,
        `  audit: { to: "${everything.url()}", providers: [discord], include_unverified: true }`,
        '',
      ].join('\n'),
    });
    url = server.running.url;
    mcp = new Client({ name: 'switchboard-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    await mcp.listTools();
  });

  afterAll(async () => {
    await mcp?.close();
    await server?.close();
    await Promise.all([forwarded?.close(), everything?.close(), target?.close()]);
  });

  async function ingest(route: string, delivery: Signed): Promise<{ status: number; id: string }> {
    const res = await fetch(`${url}/hooks/${route}`, {
      method: 'POST',
      body: new Uint8Array(delivery.body),
      headers: delivery.headers,
    });
    const body = (await res.json()) as { id?: string };
    return { status: res.status, id: body.id ?? '' };
  }

  async function api<T>(
    path: string,
    init: { method?: string; body?: unknown } = {},
  ): Promise<{ status: number; body: T }> {
    const res = await fetch(`${url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  const arrivals = (consumer: Consumer, id: string): RecordedRequest[] =>
    consumer.requests.filter((r) => header(r, 'x-switchboard-replay') === id);

  it('Replaying an asymmetric event sends its original signature: signed original, and discord-interactions accepts the replay', async () => {
    const sentAt = Date.now() - 30_000;
    const genuine = discordCase.deliver(discordCase.secret, sentAt) as Signed;
    const { status, id } = await ingest('discord', genuine);
    expect(status).toBe(200);

    const result = await callOk<ReplayResult>(mcp, 'replay_webhook_event', { id, target_url: target.url() });
    expect(result).toMatchObject({ delivered: true, signed: 'original' });
    expect(result.signature_headers).toEqual(expect.arrayContaining(['x-signature-ed25519', 'x-signature-timestamp']));
    const received = arrivals(target, id).at(-1);
    expect(received?.body.equals(genuine.body)).toBe(true);
    // The original timestamp, not the replay's: a consumer checking freshness sees when Discord sent it.
    expect(header(received, 'x-signature-timestamp')).toBe(genuine.headers['x-signature-timestamp']);
    expect(await discordAccepts(received)).toBe(true);

    // The same over the HTTP API.
    const viaApi = await api<ReplayResult>(`/api/events/${id}/replay`, {
      method: 'POST',
      body: { target_url: target.url() },
    });
    expect(viaApi.body).toMatchObject({ delivered: true, signed: 'original' });
    expect(await discordAccepts(arrivals(target, id).at(-1))).toBe(true);
  });

  it('an event that failed its check gets no signature: replay refuses it, unsigned: true sends it bare', async () => {
    const forged = discordCase.deliver(discordCase.wrongSecret, Date.now()) as Signed;
    expect((await ingest('discord', forged)).status).toBe(401);
    const events = await api<{ events: Array<{ id: string; verified: boolean }> }>('/api/events?provider=discord');
    const rejected = events.body.events.find((e) => !e.verified);
    expect(rejected).toBeDefined();
    const id = rejected?.id ?? '';

    const refused = await api<{ error: { code: string } }>(`/api/events/${id}/replay`, {
      method: 'POST',
      body: { target_url: target.url() },
    });
    expect(refused.body.error.code).toBe('invalid_argument');
    const bare = await api<ReplayResult>(`/api/events/${id}/replay`, {
      method: 'POST',
      body: { target_url: target.url(), unsigned: true },
    });
    expect(bare.body).toMatchObject({ delivered: true, signed: 'unsigned', signature_headers: [] });
    const received = arrivals(target, id).at(-1);
    expect(received?.headers['x-signature-ed25519']).toBeUndefined();
    expect(received?.headers['x-signature-timestamp']).toBeUndefined();

    // Forwarded to a rule that takes unverified events, still without the forged signature.
    const audited = await eventually(() => arrivals(everything, id).at(-1), 'the forged event at the audit consumer');
    expect(audited.headers['x-signature-ed25519']).toBeUndefined();
    // The replay headers listen builds on carry no original signature for it either.
    const info = await api<ApiReplayHeaders>(`/api/events/${id}/replay-headers`);
    expect(info.body.passed_check).toBe(false);
    expect(info.body.original_headers).toBeUndefined();
    expect(originalCredentials(info.body)).toBeNull();
  });

  it('forwarding sends the original headers, which discord-interactions and @sendgrid/eventwebhook accept', async () => {
    const discord = await ingest('discord', discordCase.deliver(discordCase.secret, Date.now()) as Signed);
    const mail = await ingest('sendgrid', sendgridCase.deliver(sendgridCase.secret, Date.now()) as Signed);
    expect([discord.status, mail.status]).toEqual([200, 200]);
    const discordArrival = await eventually(
      () => arrivals(forwarded, discord.id).at(-1),
      'the forwarded discord event',
    );
    const mailArrival = await eventually(() => arrivals(forwarded, mail.id).at(-1), 'the forwarded sendgrid event');
    expect(await discordAccepts(discordArrival)).toBe(true);
    expect(sendgridAccepts(mailArrival)).toBe(true);
  });

  it('listen gets the original headers of an event that passed its check, and sends them unchanged', async () => {
    const genuine = sendgridCase.deliver(sendgridCase.secret, Date.now()) as Signed;
    const { id } = await ingest('sendgrid', genuine);
    const info = await api<ApiReplayHeaders>(`/api/events/${id}/replay-headers`);
    expect(info.body.passed_check).toBe(true);
    expect(info.body.original_headers).toEqual({
      'x-twilio-email-event-webhook-signature': genuine.headers['x-twilio-email-event-webhook-signature'],
      'x-twilio-email-event-webhook-timestamp': genuine.headers['x-twilio-email-event-webhook-timestamp'],
    });
    const sent = originalCredentials(info.body) ?? {};
    expect(sendgridAccepts({ method: 'POST', url: '/', headers: sent, rawHeaders: [], body: genuine.body })).toBe(true);
    // A server answer that claims original headers for an event that did not pass is not trusted.
    expect(originalCredentials({ ...info.body, passed_check: false })).toBeNull();
  });

  it('a Standard Webhooks member configured with a whpk_ key only is replayed with its original v1a headers', async () => {
    const genuine = v1aDelivery();
    const { status, id } = await ingest('svix', genuine);
    expect(status).toBe(200);
    const replayed = await api<ReplayResult>(`/api/events/${id}/replay`, {
      method: 'POST',
      body: { target_url: target.url() },
    });
    expect(replayed.body).toMatchObject({ delivered: true, signed: 'original' });
    const received = arrivals(target, id).at(-1);
    const message = Buffer.concat([
      Buffer.from(`${header(received, 'svix-id')}.${header(received, 'svix-timestamp')}.`),
      received?.body ?? Buffer.alloc(0),
    ]);
    const signature = Buffer.from(header(received, 'svix-signature').replace(/^v1a,/, ''), 'base64');
    expect(header(received, 'svix-timestamp')).toBe(genuine.headers['svix-timestamp']);
    expect(verify(null, message, SVIX_KEY.publicKey, signature)).toBe(true);
  });
});
