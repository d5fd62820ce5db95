import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectFail, expectOk, presetOf } from '../fixtures.ts';
import { formFields, TWILIO_URL, twilioCase, twilioForm, webhooks } from '../../../catalog/twilio/twilio.case.ts';

describe('twilio beyond form fields', () => {
  const preset = presetOf({ preset: 'twilio', public_url: TWILIO_URL });
  const secret = twilioCase.secret;
  const verify = (body: Buffer, headers: Record<string, string>, query?: string) =>
    preset.verify({
      body,
      headers,
      secrets: [secret],
      publicKeys: [],
      toleranceSeconds: 300,
      nowMs: Date.now(),
      ...(query === undefined ? {} : { query }),
    });

  it('checks a JSON body through the bodySHA256 the signed URL carries (validateRequestWithBody)', () => {
    const body = Buffer.from(JSON.stringify({ type: 'com.twilio.messaging.message.delivered', id: 'EV1' }));
    const query = `bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
    const signature = webhooks.getExpectedTwilioSignature(secret, `${TWILIO_URL}?${query}`, {});
    const headers = { 'content-type': 'application/json', 'x-twilio-signature': signature };
    expect(webhooks.validateRequestWithBody(secret, signature, `${TWILIO_URL}?${query}`, body.toString())).toBe(true);
    expectOk(verify(body, headers, query));
    expect(preset.identify(body, headers).eventType).toBe('com.twilio.messaging.message.delivered');
    const other = Buffer.from(JSON.stringify({ type: 'com.twilio.messaging.message.failed', id: 'EV1' }));
    expectFail(verify(other, headers, query), 'bad_signature');
    expectFail(verify(body, headers), 'bad_signature');
  });

  it('re-signs a JSON body with its bodySHA256, which validateRequestWithBody accepts', () => {
    const body = Buffer.from('{"id":"EV2"}');
    const sign = preset.sign;
    if (sign === undefined) throw new Error('twilio must sign');
    const query = `bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
    const signed = sign({ body, secret, nowMs: Date.now(), query });
    const signature = signed['x-twilio-signature'] ?? '';
    expect(webhooks.validateRequestWithBody(secret, signature, `${TWILIO_URL}?${query}`, body.toString())).toBe(true);
  });

  it('signs over the query Twilio called with, and accepts the URL with or without its default port', () => {
    const params = twilioForm();
    const body = Buffer.from(new URLSearchParams(params).toString());
    const withQuery = webhooks.getExpectedTwilioSignature(secret, `${TWILIO_URL}?tenant=7`, params);
    expectOk(verify(body, { 'x-twilio-signature': withQuery }, 'tenant=7'));
    expectFail(verify(body, { 'x-twilio-signature': withQuery }), 'bad_signature');
    const port = TWILIO_URL.replace('.com/', '.com:443/');
    const withPort = webhooks.getExpectedTwilioSignature(secret, port, params);
    expect(webhooks.validateRequest(secret, withPort, TWILIO_URL, formFields(body))).toBe(true);
    expectOk(verify(body, { 'x-twilio-signature': withPort }));
  });

  it('checks HMAC-SHA256 when the signature settings name it, and refuses an unknown algorithm', () => {
    const params = twilioForm();
    const body = Buffer.from(new URLSearchParams(params).toString());
    const settings = 'key=webhooks_sharedkey_1,algorithm=HMAC_SHA256';
    const signature = webhooks.getExpectedTwilioSignature(secret, TWILIO_URL, params, 'HMAC_SHA256');
    expect(webhooks.validateRequest(secret, signature, TWILIO_URL, params, 'HMAC_SHA256')).toBe(true);
    const headers = { 'x-twilio-signature': signature, 'x-twilio-webhooks-signature-settings': settings };
    expectOk(verify(body, headers));
    expectFail(verify(body, { 'x-twilio-signature': signature }), 'bad_signature');
    expectFail(
      verify(body, { ...headers, 'x-twilio-webhooks-signature-settings': 'algorithm=MD5' }),
      'malformed_header',
    );
  });

  it('signs repeated fields as twilio does: each distinct value, sorted', () => {
    const body = Buffer.from('To=%2B1415&MediaUrl=b&MediaUrl=a&MediaUrl=b');
    const signature = webhooks.getExpectedTwilioSignature(secret, TWILIO_URL, {
      To: '+1415',
      MediaUrl: ['b', 'a', 'b'],
    } as unknown as Record<string, string>);
    expectOk(verify(body, { 'x-twilio-signature': signature }));
  });
});
