/**
 * Stripe: `Stripe-Signature: t=<unix>,v1=<hex>`, HMAC-SHA256 of `{t}.{body}` keyed by the `whsec_…`
 * secret as written. The `stripe` package signs (webhooks.generateTestHeaderString) and verifies
 * (webhooks.constructEvent, which holds t to five minutes of its clock), so both sides of the case
 * are Stripe's own code. https://docs.stripe.com/webhooks#verify-events
 */
import Stripe from 'stripe';
import { jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

const stripe = new Stripe('sk_test_switchboard');

export const stripeCase: ProviderCase = {
  preset: 'stripe',
  ...sharedSecret('whsec_stripe-endpoint-secret'),
  deliver: (secret, atMs) => {
    const body = samplePayload('stripe', 'payment-intent-succeeded.json');
    const timestamp = Math.floor(atMs / 1000);
    return jsonDelivery(body, {
      'stripe-signature': stripe.webhooks.generateTestHeaderString({
        payload: body.toString('utf8'),
        secret,
        timestamp,
      }),
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    });
  },
  accepts: ({ body, headers }, secret) => {
    try {
      stripe.webhooks.constructEvent(body, headers['stripe-signature'] ?? '', secret);
      return true;
    } catch {
      return false;
    }
  },
  timestamped: true,
  requiredHeader: 'Stripe-Signature',
  eventType: 'payment_intent.succeeded',
  proof: 'package-signs',
};
