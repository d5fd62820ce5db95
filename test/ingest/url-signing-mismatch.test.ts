/**
 * A URL-signing preset's mismatch names the URL it checked (issue 41.3), so a public_url that is not
 * the URL the provider was given is the obvious suspect: Twilio signing for another URL, with its
 * own package, on the wire. The URL is shown without its user and password and with every
 * secret-looking query value redacted, in the 401 and in the stored verify_detail alike.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEventDetail, ErrorEnvelope } from '../../generated/types.ts';
import { presetFor } from '../../src/verify/preset-registry.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';
import { square as squareHelper } from '../verify/providers/square-helper.ts';
import { twilioForm, webhooks } from '../../catalog/twilio/twilio.case.ts';

const TOKEN = 'url-signing-mismatch-token';
const AUTH_TOKEN = 'twilio-auth-token-41-3';

describe('a URL-signing mismatch names the URL it checked', () => {
  let composed: ComposedServer;

  beforeAll(async () => {
    const providers = {
      twilio: { preset: 'twilio', secret: AUTH_TOKEN, public_url: 'https://hooks.example.com/hooks/twilio' },
      // A public URL carrying credentials in its authority: they are never shown.
      guarded: {
        preset: 'twilio',
        secret: AUTH_TOKEN,
        public_url: 'https://relay:pw-41-3@hooks.example.com/hooks/guarded',
      },
    };
    // JSON is YAML.
    composed = await startComposedServer({ envToken: TOKEN, config: JSON.stringify({ providers }) });
  }, 60_000);

  afterAll(async () => {
    await composed?.close();
  });

  /** POSTs the form Twilio signed for `signedFor`; the 401's message, and the stored event's verify_detail. */
  async function deliver(
    path: string,
    signedFor: string,
  ): Promise<{ status: number; message: string; stored: string }> {
    const form = twilioForm();
    const res = await fetch(`${composed.running.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': webhooks.getExpectedTwilioSignature(AUTH_TOKEN, signedFor, form),
      },
      body: new URLSearchParams(form).toString(),
    });
    const { error } = (await res.json()) as ErrorEnvelope;
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    const list = (await (await fetch(`${composed.running.url}/api/events?limit=1`, auth)).json()) as {
      events: { id: string }[];
    };
    const detail = (await (
      await fetch(`${composed.running.url}/api/events/${list.events[0]?.id ?? ''}`, auth)
    ).json()) as ApiEventDetail;
    return { status: res.status, message: error.message, stored: detail.verify_detail };
  }

  it('says which URL it checked when Twilio signed for another one', async () => {
    const got = await deliver('/hooks/twilio', 'https://tunnel.example.net/hooks/twilio');
    const detail = 'signature mismatch (X-Twilio-Signature; checked against https://hooks.example.com/hooks/twilio)';
    expect(got).toEqual({ status: 401, message: `verification failed: ${detail}`, stored: detail });
  });

  it('shows the query the delivery came with, its secret-looking values redacted', async () => {
    const got = await deliver('/hooks/twilio?tenant=7&token=t-41-3', 'https://hooks.example.com/hooks/twilio?tenant=8');
    const detail =
      'signature mismatch (X-Twilio-Signature; checked against ' +
      'https://hooks.example.com/hooks/twilio?tenant=7&token=[redacted])';
    expect(got).toEqual({ status: 401, message: `verification failed: ${detail}`, stored: detail });
  });

  it("never shows a public_url's user or password", async () => {
    const got = await deliver('/hooks/guarded?api_key=k-41-3&region=eu', 'https://hooks.example.com/hooks/guarded');
    const detail =
      'signature mismatch (X-Twilio-Signature; checked against ' +
      'https://hooks.example.com/hooks/guarded?api_key=[redacted]&region=eu)';
    expect(got).toEqual({ status: 401, message: `verification failed: ${detail}`, stored: detail });
    expect(JSON.stringify(got)).not.toMatch(/relay|pw-41-3|k-41-3/);
  });
});

describe('every URL-signing preset names the URL it checked', () => {
  it('square: signed for another URL, confirmed by its own package first', async () => {
    const secret = 'square-signature-key-41-3';
    const publicUrl = 'https://hooks.example.com/hooks/square';
    const elsewhere = 'https://tunnel.example.net/hooks/square';
    const body = Buffer.from(JSON.stringify({ type: 'payment.created', event_id: 'e-41-3' }));
    const signature = createHmac('sha256', secret).update(elsewhere).update(body).digest('base64');
    const verifies = (notificationUrl: string): Promise<boolean> =>
      squareHelper.verifySignature({
        requestBody: body.toString('utf8'),
        signatureHeader: signature,
        signatureKey: secret,
        notificationUrl,
      });
    expect([await verifies(elsewhere), await verifies(publicUrl)]).toEqual([true, false]);

    const preset = presetFor({ preset: 'square', secret, public_url: publicUrl });
    const outcome = preset.verify({
      body,
      headers: { 'x-square-hmacsha256-signature': signature },
      secrets: [secret],
      publicKeys: [],
      toleranceSeconds: 300,
      nowMs: Date.now(),
      query: '',
    });
    expect(outcome).toEqual({
      ok: false,
      reason: 'bad_signature',
      detail: `signature mismatch (x-square-hmacsha256-signature; checked against ${publicUrl})`,
    });
  });
});
