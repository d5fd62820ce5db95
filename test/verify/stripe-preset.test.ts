import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { stripePreset } from '../../src/verify/stripe-preset.ts';
import { BINARY_BODY, expectFail, expectNoLeak, expectOk, flipByte, input, NOW_MS, NOW_S } from './fixtures.ts';

const stripe = new Stripe('sk_test_x');
const SECRET = 'whsec_test_4eC39HqLyjWDarjtT1zdp7dc';
const OLD_SECRET = 'whsec_test_old_0123456789abcdef';

const EVENT = {
  id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
  object: 'event',
  api_version: '2022-11-15',
  created: NOW_S,
  data: { object: { id: 'pi_3NG8Du2eZvKYlo2C0qjOZMrm', object: 'payment_intent', amount: 2000, currency: 'usd' } },
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type: 'payment_intent.succeeded',
};
const PAYLOAD = JSON.stringify(EVENT, null, 2);
const BODY = Buffer.from(PAYLOAD, 'utf8');

function header(timestamp = NOW_S, secret = SECRET, payload = PAYLOAD): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

describe('stripe preset', () => {
  it('accepts a delivery signed by the stripe library', () => {
    const outcome = stripePreset.verify(input(BODY, { 'stripe-signature': header() }, [SECRET]));
    expect(outcome).toEqual({ ok: true, detail: 'hmac-sha256 valid (Stripe-Signature)' });
  });

  it('rejects a wrong secret', () => {
    const outcome = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S, 'whsec_other') }, [SECRET]));
    expect(outcome).toEqual({ ok: false, reason: 'bad_signature', detail: 'signature mismatch (Stripe-Signature)' });
  });

  it('rejects a body with one byte flipped', () => {
    expectFail(stripePreset.verify(input(flipByte(BODY), { 'stripe-signature': header() }, [SECRET])), 'bad_signature');
  });

  it('rejects a timestamp outside the tolerance, in the past or in the future', () => {
    const old = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S - 301) }, [SECRET]));
    expectFail(old, 'stale_timestamp');
    expect(old.detail).toContain('timestamp outside 300 s tolerance');
    expect(old.detail).toContain('301 s old');
    const future = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S + 301) }, [SECRET]));
    expectFail(future, 'stale_timestamp');
    expect(future.detail).toContain('in the future');
    expectOk(stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S - 300) }, [SECRET])));
    expectOk(stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S + 300) }, [SECRET])));
  });

  it('honours a configured tolerance', () => {
    const h = { 'stripe-signature': header(NOW_S - 500) };
    expectOk(stripePreset.verify(input(BODY, h, [SECRET], { toleranceSeconds: 600 })));
    const tight = stripePreset.verify(input(BODY, h, [SECRET], { toleranceSeconds: 60 }));
    expectFail(tight, 'stale_timestamp');
    expect(tight.detail).toContain('60 s tolerance');
  });

  it('reports a stale timestamp only for an authentic signature', () => {
    const forged = stripePreset.verify(
      input(BODY, { 'stripe-signature': header(NOW_S - 9999, 'whsec_other') }, [SECRET]),
    );
    expectFail(forged, 'bad_signature');
  });

  it('reports a missing and a malformed header', () => {
    expect(stripePreset.verify(input(BODY, {}, [SECRET]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header Stripe-Signature',
    });
    const v1Only = header().replace(/^t=\d+,/, '');
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': v1Only }, [SECRET])), 'malformed_header');
    const noV1 = `t=${NOW_S},v0=abc`;
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': noV1 }, [SECRET])), 'malformed_header');
    const looseTime = header().replace(/^t=(\d+)/, 't=$1abc');
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': looseTime }, [SECRET])), 'malformed_header');
  });

  it('accepts either configured secret during rotation', () => {
    const secrets = [SECRET, OLD_SECRET];
    const viaOld = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S, OLD_SECRET) }, secrets));
    expect(viaOld).toEqual({ ok: true, detail: 'hmac-sha256 valid (Stripe-Signature); secret 2 of 2' });
    expectOk(stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S, SECRET) }, secrets)));
  });

  it('accepts a header carrying several v1 signatures when any one matches (Stripe rolling a secret)', () => {
    const good = header().split('v1=')[1] ?? '';
    const bad = header(NOW_S, 'whsec_rolled').split('v1=')[1] ?? '';
    const multi = `t=${NOW_S},v1=${bad},v1=${good},v0=${'0'.repeat(64)}`;
    expectOk(stripePreset.verify(input(BODY, { 'stripe-signature': multi }, [SECRET])));
    expectFail(
      stripePreset.verify(input(BODY, { 'stripe-signature': `t=${NOW_S},v1=${bad}` }, [SECRET])),
      'bad_signature',
    );
  });

  it('rejects when no secret is configured', () => {
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': header() }, [])), 'missing_secret');
  });

  it('produces a header that stripe.webhooks.constructEvent accepts', () => {
    const signed = stripePreset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS }) ?? {};
    expect(signed['stripe-signature']).toMatch(new RegExp(`^t=${NOW_S},v1=[0-9a-f]{64}$`));
    const event = stripe.webhooks.constructEvent(
      PAYLOAD,
      signed['stripe-signature'] ?? '',
      SECRET,
      300,
      undefined,
      NOW_MS,
    );
    expect(event.id).toBe(EVENT.id);
    expect(() =>
      stripe.webhooks.constructEvent(PAYLOAD, signed['stripe-signature'] ?? '', 'whsec_other', 300, undefined, NOW_MS),
    ).toThrow();
  });

  it('verifies binary bodies byte for byte', () => {
    const signature = createHmac('sha256', SECRET).update(`${NOW_S}.`).update(BINARY_BODY).digest('hex');
    const h = { 'stripe-signature': `t=${NOW_S},v1=${signature}` };
    expectOk(stripePreset.verify(input(BINARY_BODY, h, [SECRET])));
    expectFail(stripePreset.verify(input(flipByte(BINARY_BODY, 0), h, [SECRET])), 'bad_signature');
    expect(stripePreset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });

  it('never puts the secret or the signature in the detail', () => {
    const value = header();
    for (const outcome of [
      stripePreset.verify(input(BODY, { 'stripe-signature': value }, [SECRET])),
      stripePreset.verify(input(flipByte(BODY), { 'stripe-signature': value }, [SECRET])),
      stripePreset.verify(input(BODY, { 'stripe-signature': value }, [SECRET], { nowMs: NOW_MS + 3_600_000 })),
    ]) {
      expectNoLeak(outcome, [SECRET], [value]);
    }
  });

  it('identifies the event by the body type and id', () => {
    expect(stripePreset.identify(BODY, {})).toEqual({ eventType: 'payment_intent.succeeded', externalId: EVENT.id });
    expect(stripePreset.identify(Buffer.from('{"type":'), {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
