/**
 * What is Linear's own, beyond the catalog table (catalog/linear/linear.case.ts proves signing,
 * refusals, staleness, rotation and replay against @linear/sdk): the signed timestamp lives in the
 * body, so its edges, its absence and its order against the signature check are tested here, with
 * how a delivery is named.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BINARY_BODY, expectFail, expectOk, flipByte, input, NOW_MS, presetOf } from './fixtures.ts';

const SECRET = 'lin_wh_5e3c1d2b4a69788776655443322110ff';
const linearPreset = presetOf({ preset: 'linear' });

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

  it('checks a binary body’s signature and then refuses it for lacking a timestamp', () => {
    expectFail(linearPreset.verify(input(BINARY_BODY, linearHeaders(BINARY_BODY), [SECRET])), 'stale_timestamp');
    expectFail(
      linearPreset.verify(input(flipByte(BINARY_BODY, 2), linearHeaders(BINARY_BODY), [SECRET])),
      'bad_signature',
    );
    expect(linearPreset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
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
