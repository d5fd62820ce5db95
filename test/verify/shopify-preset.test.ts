import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { shopifyPreset } from '../../src/verify/shopify-preset.ts';
import { BINARY_BODY, expectFail, expectNoLeak, expectOk, flipByte, input, NOW_MS } from './fixtures.ts';

const SECRET = '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';
const OLD_SECRET = 'shpss_old_00000000000000000000000000';
const BODY = Buffer.from(
  JSON.stringify({
    id: 820982911946154500,
    email: 'jon@example.com',
    total_price: '403.00',
    currency: 'USD',
    line_items: [],
  }),
);

/** Shopify's documented scheme, built independently of the preset. */
function shopifyHeaders(body: Buffer, secret = SECRET): Record<string, string> {
  return {
    'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
    'x-shopify-topic': 'orders/create',
    'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    'x-shopify-shop-domain': 'example.myshopify.com',
  };
}

describe('shopify preset', () => {
  it('accepts a correctly signed delivery', () => {
    expect(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY), [SECRET]))).toEqual({
      ok: true,
      detail: 'hmac-sha256 valid (X-Shopify-Hmac-Sha256)',
    });
  });

  it('rejects a wrong secret', () => {
    expect(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY, 'wrong'), [SECRET]))).toEqual({
      ok: false,
      reason: 'bad_signature',
      detail: 'signature mismatch (X-Shopify-Hmac-Sha256)',
    });
  });

  it('rejects a body with one byte flipped', () => {
    expectFail(shopifyPreset.verify(input(flipByte(BODY), shopifyHeaders(BODY), [SECRET])), 'bad_signature');
  });

  it('does not accept a hex digest in place of base64', () => {
    const hex = createHmac('sha256', SECRET).update(BODY).digest('hex');
    expectFail(shopifyPreset.verify(input(BODY, { 'x-shopify-hmac-sha256': hex }, [SECRET])), 'bad_signature');
  });

  it('has no timestamp to go stale: an old delivery still verifies', () => {
    expectOk(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY), [SECRET], { nowMs: NOW_MS + 365 * 86_400_000 })));
  });

  it('reports a missing header', () => {
    expect(shopifyPreset.verify(input(BODY, { 'x-shopify-topic': 'orders/create' }, [SECRET]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header X-Shopify-Hmac-Sha256',
    });
  });

  it('accepts either secret during rotation', () => {
    const secrets = [SECRET, OLD_SECRET];
    expectOk(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY, OLD_SECRET), secrets)));
    expectOk(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY, SECRET), secrets)));
    expectFail(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY, 'third'), secrets)), 'bad_signature');
  });

  it('rejects when no secret is configured', () => {
    expectFail(shopifyPreset.verify(input(BODY, shopifyHeaders(BODY), [])), 'missing_secret');
  });

  it('signs as Shopify does', () => {
    const signed = shopifyPreset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS });
    expect(signed).toEqual({ 'x-shopify-hmac-sha256': shopifyHeaders(BODY)['x-shopify-hmac-sha256'] });
  });

  it('verifies binary bodies', () => {
    expectOk(shopifyPreset.verify(input(BINARY_BODY, shopifyHeaders(BINARY_BODY), [SECRET])));
    expectFail(
      shopifyPreset.verify(input(flipByte(BINARY_BODY, 3), shopifyHeaders(BINARY_BODY), [SECRET])),
      'bad_signature',
    );
  });

  it('never puts the secret or the signature in the detail', () => {
    const headers = shopifyHeaders(BODY);
    for (const outcome of [
      shopifyPreset.verify(input(BODY, headers, [SECRET])),
      shopifyPreset.verify(input(flipByte(BODY), headers, [SECRET])),
    ]) {
      expectNoLeak(outcome, [SECRET], [headers['x-shopify-hmac-sha256'] ?? '']);
    }
  });

  it('identifies by topic and webhook id, whatever the body', () => {
    const expected = { eventType: 'orders/create', externalId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043' };
    expect(shopifyPreset.identify(BODY, shopifyHeaders(BODY))).toEqual(expected);
    expect(shopifyPreset.identify(BINARY_BODY, shopifyHeaders(BODY))).toEqual(expected);
    expect(shopifyPreset.identify(BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
