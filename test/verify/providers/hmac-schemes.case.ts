/**
 * The providers whose HMAC-SHA256 (SHA-1 for Trello) covers more than the body: a timestamp, the
 * URL it called, or both. Each signer below writes the headers as the provider's documentation
 * (linked above it) describes them, computed here independently of src/. A delivery is checked by
 * the provider's own package where it publishes a verifier (the package only verifies, so these
 * signers are first shown to pass it), otherwise by recomputing the signature from the timestamp
 * the delivery carries, as the documentation says a receiver does.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Signature } from '@hubspot/api-client';
import Mux from '@mux/mux-node';
import { Paddle } from '@paddle/paddle-node-sdk';
import { WorkOS } from '@workos-inc/node';
import type { PresetName } from '../../../generated/constants.ts';
import { hmac, jsonDelivery, type ProviderCase, PUBLIC_URL, sharedSecret, type Signed } from './provider-case.ts';
import { isoSeconds, samplePayload, unixSeconds } from './timed-case.ts';
import { square } from './square-helper.ts';

type Headers = Record<string, string>;
type Signer = (body: Buffer, secret: string, at: string, url: string) => Headers;
type Verifier = (delivery: Signed, secret: string, url: string) => Promise<boolean> | boolean;

const hex = (secret: string, ...parts: (string | Buffer)[]): string => hmac('sha256', secret, parts, 'hex');
const base64 = (secret: string, ...parts: (string | Buffer)[]): string => hmac('sha256', secret, parts, 'base64');

const SIGNERS: Partial<Record<PresetName, Signer>> = {
  // https://developer.box.com/guides/webhooks/v2/signatures-v2/ (one signature per key: primary, secondary)
  box: (body, secret, at) => ({
    'box-delivery-id': randomUUID(),
    'box-delivery-timestamp': at,
    'box-signature-version': '1',
    'box-signature-algorithm': 'HmacSHA256',
    'box-signature-primary': base64(secret, body, at),
  }),
  // https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures
  calendly: (body, secret, t) => ({ 'calendly-webhook-signature': `t=${t},v1=${hex(secret, `${t}.`, body)}` }),
  // https://developers.hubspot.com/docs/guides/apps/authentication/validating-requests (v3, a timestamp in ms)
  hubspot: (body, secret, at, url) => ({
    'x-hubspot-request-timestamp': at,
    'x-hubspot-signature-v3': base64(secret, 'POST', url, body, at),
  }),
  // https://docs.mux.com/core/verify-webhook-signatures
  mux: (body, secret, t) => ({ 'mux-signature': `t=${t},v1=${hex(secret, `${t}.`, body)}` }),
  // https://developer.paddle.com/webhooks/signature-verification (Paddle Billing)
  paddle: (body, secret, ts) => ({ 'paddle-signature': `ts=${ts};h1=${hex(secret, `${ts}:`, body)}` }),
  // https://developer.squareup.com/docs/webhooks/step3validate (the notification URL, then the body)
  square: (body, secret, _at, url) => ({ 'x-square-hmacsha256-signature': base64(secret, url, body) }),
  // https://developers.tiktok.com/doc/webhooks-verification
  tiktok: (body, secret, t) => ({ 'tiktok-signature': `t=${t},s=${hex(secret, `${t}.`, body)}` }),
  // https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/ (the body, then the callback URL)
  trello: (body, secret, _at, url) => ({ 'x-trello-webhook': hmac('sha1', secret, [body, url], 'base64') }),
  // https://workos.com/docs/events/data-syncing/webhooks (a timestamp in ms)
  workos: (body, secret, t) => ({ 'workos-signature': `t=${t}, v1=${hex(secret, `${t}.`, body)}` }),
  // https://developer.zendesk.com/documentation/webhooks/verifying/
  zendesk: (body, secret, at) => ({
    'x-zendesk-webhook-signature-timestamp': at,
    'x-zendesk-webhook-signature': base64(secret, at, body),
  }),
  // https://developers.zoom.us/docs/api/webhooks/
  zoom: (body, secret, ts) => ({
    'x-zm-request-timestamp': ts,
    'x-zm-signature': `v0=${hex(secret, `v0:${ts}:`, body)}`,
  }),
};

// Only the helpers are loaded where the whole SDK takes seconds to import.
const require = createRequire(import.meta.url);
const { WebhooksManager: box } = require('box-node-sdk/lib/managers/webhooks') as {
  WebhooksManager: { validateMessage(body: string, headers: Headers, primaryKey: string): Promise<boolean> };
};
const mux = new Mux({ tokenId: 'test', tokenSecret: 'test' });
const paddle = new Paddle('pdl_sdbx_apikey_test');
const workos = new WorkOS('sk_test_switchboard');

/** The providers' own verifiers (box-node-sdk, @hubspot/api-client, @mux/mux-node, …). */
const VERIFIERS: Partial<Record<PresetName, Verifier>> = {
  box: ({ body, headers }, secret) => box.validateMessage(body.toString('utf8'), headers, secret),
  hubspot: ({ body, headers }, clientSecret, url) => {
    try {
      return Signature.isValid({
        signatureVersion: 'v3',
        signature: headers['x-hubspot-signature-v3'] ?? '',
        clientSecret,
        requestBody: body.toString('utf8'),
        url,
        method: 'POST',
        timestamp: Number(headers['x-hubspot-request-timestamp']),
      });
    } catch {
      return false;
    }
  },
  mux: ({ body, headers }, secret) =>
    mux.webhooks.verifySignature(body.toString('utf8'), headers, secret).then(
      () => true,
      () => false,
    ),
  // Paddle's verifier allows 5 s of age, so it is shown fresh deliveries only.
  paddle: ({ body, headers }, secret) =>
    paddle.webhooks.isSignatureValid(body.toString('utf8'), secret, headers['paddle-signature'] ?? ''),
  square: ({ body, headers }, signatureKey, notificationUrl) =>
    square.verifySignature({
      requestBody: body.toString('utf8'),
      signatureHeader: headers['x-square-hmacsha256-signature'] ?? '',
      signatureKey,
      notificationUrl,
    }),
  async workos({ body, headers }, secret) {
    // WorkOS signs JSON.stringify of the parsed payload: the same bytes for a compact body.
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      return false;
    }
    return workos.webhooks.constructEvent({ payload, sigHeader: headers['workos-signature'] ?? '', secret }).then(
      () => true,
      () => false,
    );
  },
};

/** Where a receiver without a package reads the signed timestamp back (none where only the URL is signed). */
const SIGNED_AT: Partial<Record<PresetName, (headers: Headers) => string>> = {
  calendly: (headers) => /t=(\d+)/.exec(headers['calendly-webhook-signature'] ?? '')?.[1] ?? '',
  tiktok: (headers) => /t=(\d+)/.exec(headers['tiktok-signature'] ?? '')?.[1] ?? '',
  zendesk: (headers) => headers['x-zendesk-webhook-signature-timestamp'] ?? '',
  zoom: (headers) => headers['x-zm-request-timestamp'] ?? '',
};

const URL_SIGNED: ReadonlySet<PresetName> = new Set(['hubspot', 'square', 'trello']);

const msString = (ms: number): string => String(Math.floor(ms));

type Row = [
  preset: PresetName,
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string,
  /** How the timestamp is written (null: none is signed, only the URL). */
  clock: ((ms: number) => string) | null,
  /** The signature's header, as the provider's documentation spells it. */
  header: string,
  eventType: string,
];

const ROWS: readonly Row[] = [
  ['box', 'file-uploaded', isoSeconds, 'BOX-SIGNATURE-PRIMARY', 'FILE.UPLOADED'],
  ['calendly', 'invitee-created', unixSeconds, 'Calendly-Webhook-Signature', 'invitee.created'],
  ['hubspot', 'contact-creation', msString, 'X-HubSpot-Signature-v3', 'contact.creation'],
  ['mux', 'video-asset-ready', unixSeconds, 'Mux-Signature', 'video.asset.ready'],
  ['paddle', 'transaction-completed', unixSeconds, 'Paddle-Signature', 'transaction.completed'],
  ['square', 'payment-created', null, 'x-square-hmacsha256-signature', 'payment.created'],
  ['tiktok', 'video-publish-complete', unixSeconds, 'TikTok-Signature', 'video.publish.complete'],
  ['trello', 'createcard', null, 'X-Trello-Webhook', 'createCard'],
  ['workos', 'user-created', msString, 'WorkOS-Signature', 'user.created'],
  [
    'zendesk',
    'zen-event-type-ticket-created',
    isoSeconds,
    'X-Zendesk-Webhook-Signature',
    'zen:event-type:ticket.created',
  ],
  ['zoom', 'meeting-started', unixSeconds, 'x-zm-signature', 'meeting.started'],
];

function hmacSchemeCase([preset, sample, clock, header, eventType]: Row): ProviderCase {
  const sign = SIGNERS[preset];
  if (sign === undefined) throw new Error(`no signer for ${preset}`);
  const url = `${PUBLIC_URL}${preset}`;
  const name = header.toLowerCase();
  const verifier = VERIFIERS[preset];
  const signedAt = SIGNED_AT[preset] ?? (() => '');
  return {
    preset,
    // A provider that signs the URL it calls is configured with that URL.
    ...(URL_SIGNED.has(preset) ? { config: { public_url: url } } : {}),
    ...sharedSecret(`${preset}-signing-secret`),
    deliver(secret, atMs) {
      const body = samplePayload(preset, `${sample}.json`);
      return jsonDelivery(body, sign(body, secret, clock?.(atMs) ?? '', url));
    },
    accepts(delivery, secret) {
      if (verifier !== undefined) return verifier(delivery, secret, url);
      const { body, headers } = delivery;
      return headers[name] === sign(body, secret, signedAt(headers), url)[name];
    },
    timestamped: clock !== null,
    requiredHeader: header,
    eventType,
    proof: verifier === undefined ? 'example' : 'package-verifies',
  };
}

export const hmacSchemeCases: readonly ProviderCase[] = ROWS.map(hmacSchemeCase);
