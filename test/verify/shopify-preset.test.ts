/**
 * What is Shopify's own, beyond the catalog table (catalog/shopify/shopify.case.ts proves signing,
 * refusals, rotation, the absent timestamp and replay against @shopify/shopify-api): the digest's
 * encoding, and how a delivery is named whatever its body.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BINARY_BODY, expectFail, input, presetOf } from './fixtures.ts';

const SECRET = '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';
const BODY = Buffer.from(JSON.stringify({ id: 820982911946154500, email: 'jon@example.com', line_items: [] }));
const HEADERS = {
  'x-shopify-topic': 'orders/create',
  'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
  'x-shopify-shop-domain': 'example.myshopify.com',
};
const shopify = presetOf({ preset: 'shopify' });

describe('shopify preset', () => {
  it('does not accept a hex digest in place of base64', () => {
    const hex = createHmac('sha256', SECRET).update(BODY).digest('hex');
    expectFail(shopify.verify(input(BODY, { ...HEADERS, 'x-shopify-hmac-sha256': hex }, [SECRET])), 'bad_signature');
  });

  it('identifies by topic and webhook id, whatever the body', () => {
    const expected = { eventType: 'orders/create', externalId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043' };
    expect(shopify.identify(BODY, HEADERS)).toEqual(expected);
    expect(shopify.identify(BINARY_BODY, HEADERS)).toEqual(expected);
    expect(shopify.identify(BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
