/**
 * What is Stripe's own, beyond the catalog table (catalog/stripe/stripe.case.ts proves signing, refusals,
 * staleness, rotation and replay against the stripe package): the tolerance's exact edges, the
 * header's grammar, several v1 signatures at once, and how an event is named.
 */
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { expectFail, expectOk, input, NOW_S, presetOf } from './fixtures.ts';

const stripe = new Stripe('sk_test_x');
const SECRET = 'whsec_test_4eC39HqLyjWDarjtT1zdp7dc';
const stripePreset = presetOf({ preset: 'stripe' });

const EVENT = {
  id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
  object: 'event',
  created: NOW_S,
  data: { object: { id: 'pi_3NG8Du2eZvKYlo2C0qjOZMrm', object: 'payment_intent', amount: 2000, currency: 'usd' } },
  type: 'payment_intent.succeeded',
};
const PAYLOAD = JSON.stringify(EVENT, null, 2);
const BODY = Buffer.from(PAYLOAD, 'utf8');

function header(timestamp = NOW_S, secret = SECRET): string {
  return stripe.webhooks.generateTestHeaderString({ payload: PAYLOAD, secret, timestamp });
}

describe('stripe preset', () => {
  it('takes the tolerance’s edges as fresh, one second past them as stale, and says how far off', () => {
    const old = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S - 301) }, [SECRET]));
    expectFail(old, 'stale_timestamp');
    expect(old.detail).toContain('timestamp outside 300 s tolerance');
    expect(old.detail).toContain('301 s old');
    const future = stripePreset.verify(input(BODY, { 'stripe-signature': header(NOW_S + 301) }, [SECRET]));
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

  it('reports a header without its timestamp, without a v1 entry, or with a loose timestamp as malformed', () => {
    const v1Only = header().replace(/^t=\d+,/, '');
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': v1Only }, [SECRET])), 'malformed_header');
    const noV1 = `t=${NOW_S},v0=abc`;
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': noV1 }, [SECRET])), 'malformed_header');
    const looseTime = header().replace(/^t=(\d+)/, 't=$1abc');
    expectFail(stripePreset.verify(input(BODY, { 'stripe-signature': looseTime }, [SECRET])), 'malformed_header');
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

  it('identifies the event by the body type and id', () => {
    expect(stripePreset.identify(BODY, {})).toEqual({ eventType: 'payment_intent.succeeded', externalId: EVENT.id });
    expect(stripePreset.identify(Buffer.from('{"type":'), {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
