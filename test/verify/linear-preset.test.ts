import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { linearPreset } from '../../src/verify/linear-preset.ts';
import { BINARY_BODY, expectFail, expectNoLeak, expectOk, flipByte, input, NOW_MS } from './fixtures.ts';

const SECRET = 'lin_wh_5e3c1d2b4a69788776655443322110ff';
const OLD_SECRET = 'lin_wh_old_1234567890';

function linearBody(webhookTimestamp: unknown = NOW_MS, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(
    JSON.stringify({
      action: 'create',
      type: 'Issue',
      createdAt: new Date(NOW_MS).toISOString(),
      data: { id: '2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9', title: 'Fix the thing', teamId: '72b2a2dc' },
      url: 'https://linear.app/acme/issue/ENG-1/fix-the-thing',
      organizationId: '8c8d3c8a-4f1e-4d52-9f44-0b5f1b1c6b01',
      webhookId: '000042e3-d123-4980-b49f-8e140eef9329',
      webhookTimestamp,
      ...extra,
    }),
  );
}

/** Linear's documented scheme (hex HMAC-SHA256 of the raw body), built independently. */
function linearHeaders(body: Buffer, secret = SECRET): Record<string, string> {
  return {
    'linear-signature': createHmac('sha256', secret).update(body).digest('hex'),
    'linear-delivery': '234d1a4e-b617-4388-90fe-adc3633d6b72',
    'linear-event': 'Issue',
  };
}

describe('linear preset', () => {
  it('accepts a correctly signed, fresh delivery', () => {
    const body = linearBody();
    expect(linearPreset.verify(input(body, linearHeaders(body), [SECRET]))).toEqual({
      ok: true,
      detail: 'hmac-sha256 valid (Linear-Signature)',
    });
  });

  it('rejects a wrong secret', () => {
    const body = linearBody();
    expectFail(linearPreset.verify(input(body, linearHeaders(body, 'wrong'), [SECRET])), 'bad_signature');
  });

  it('rejects a body with one byte flipped', () => {
    const body = linearBody();
    expectFail(linearPreset.verify(input(flipByte(body), linearHeaders(body), [SECRET])), 'bad_signature');
  });

  it('rejects a webhookTimestamp outside the tolerance, past or future', () => {
    const old = linearBody(NOW_MS - 301_000);
    const outcome = linearPreset.verify(input(old, linearHeaders(old), [SECRET]));
    expectFail(outcome, 'stale_timestamp');
    expect(outcome.detail).toBe('timestamp outside 300 s tolerance (body webhookTimestamp 301 s old)');
    const future = linearBody(NOW_MS + 301_000);
    expectFail(linearPreset.verify(input(future, linearHeaders(future), [SECRET])), 'stale_timestamp');
    const edge = linearBody(NOW_MS - 300_000);
    expectOk(linearPreset.verify(input(edge, linearHeaders(edge), [SECRET])));
    const tight = linearBody(NOW_MS - 61_000);
    expectFail(
      linearPreset.verify(input(tight, linearHeaders(tight), [SECRET], { toleranceSeconds: 60 })),
      'stale_timestamp',
    );
  });

  it('rejects a signed body without a usable webhookTimestamp', () => {
    const withoutTimestamp = Buffer.from(JSON.stringify({ action: 'create', type: 'Issue', data: {} }));
    for (const body of [withoutTimestamp, linearBody('yesterday'), linearBody(-5), Buffer.from('not json')]) {
      const outcome = linearPreset.verify(input(body, linearHeaders(body), [SECRET]));
      expectFail(outcome, 'stale_timestamp');
      expect(outcome.detail).toContain('webhookTimestamp missing');
    }
  });

  it('reports a missing header', () => {
    const body = linearBody();
    expect(linearPreset.verify(input(body, { 'linear-delivery': 'x' }, [SECRET]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header Linear-Signature',
    });
  });

  it('accepts either secret during rotation', () => {
    const body = linearBody();
    const secrets = [OLD_SECRET, SECRET];
    expectOk(linearPreset.verify(input(body, linearHeaders(body, OLD_SECRET), secrets)));
    expectOk(linearPreset.verify(input(body, linearHeaders(body, SECRET), secrets)));
    expectFail(linearPreset.verify(input(body, linearHeaders(body, 'third'), secrets)), 'bad_signature');
  });

  it('rejects when no secret is configured', () => {
    const body = linearBody();
    expectFail(linearPreset.verify(input(body, linearHeaders(body), [])), 'missing_secret');
  });

  it('signs as Linear does', () => {
    const body = linearBody();
    expect(linearPreset.sign?.({ body, secret: SECRET, nowMs: NOW_MS })).toEqual({
      'linear-signature': linearHeaders(body)['linear-signature'],
    });
  });

  it('checks a binary body’s signature and then refuses it for lacking a timestamp', () => {
    expectFail(linearPreset.verify(input(BINARY_BODY, linearHeaders(BINARY_BODY), [SECRET])), 'stale_timestamp');
    expectFail(
      linearPreset.verify(input(flipByte(BINARY_BODY, 2), linearHeaders(BINARY_BODY), [SECRET])),
      'bad_signature',
    );
    expect(linearPreset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });

  it('never puts the secret or the signature in the detail', () => {
    const body = linearBody();
    const headers = linearHeaders(body);
    for (const outcome of [
      linearPreset.verify(input(body, headers, [SECRET])),
      linearPreset.verify(input(flipByte(body), headers, [SECRET])),
      linearPreset.verify(input(body, headers, [SECRET], { nowMs: NOW_MS + 999_000 })),
    ]) {
      expectNoLeak(outcome, [SECRET], [headers['linear-signature'] ?? '']);
    }
  });

  describe('identify', () => {
    it('combines type and action and takes the Linear-Delivery header as the id', () => {
      const body = linearBody();
      expect(linearPreset.identify(body, linearHeaders(body))).toEqual({
        eventType: 'Issue.create',
        externalId: '234d1a4e-b617-4388-90fe-adc3633d6b72',
      });
    });

    it('does not use webhookId, which is the same for every delivery', () => {
      expect(linearPreset.identify(linearBody(), {})).toEqual({ eventType: 'Issue.create', externalId: null });
    });

    it('uses the type alone when there is no action', () => {
      const body = Buffer.from(JSON.stringify({ type: 'OAuthApp', webhookTimestamp: NOW_MS }));
      expect(linearPreset.identify(body, {}).eventType).toBe('OAuthApp');
    });
  });
});
