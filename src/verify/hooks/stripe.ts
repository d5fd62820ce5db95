import { isRecord } from '../identify.ts';
import type { DeliveryBody, ProviderHooks } from '../preset-types.ts';
import { at, money, summaryLine } from '../summary.ts';

// The amount fields Stripe objects carry, most telling first (a payment intent's amount, a
// checkout session's total, an invoice's amount paid or due).
const AMOUNT_FIELDS = ['amount', 'amount_total', 'amount_paid', 'amount_due'] as const;

/** The object the event is about: its type and id, and its amount where it has one. */
function summarizeStripe(body: DeliveryBody): string | null {
  const object = at(body.json, 'data', 'object');
  if (!isRecord(object)) return null;
  const amountField = AMOUNT_FIELDS.find((field) => typeof object[field] === 'number');
  return summaryLine([
    object['object'],
    object['id'],
    amountField === undefined ? null : money(object[amountField], object['currency']),
  ]);
}

/**
 * Stripe: `Stripe-Signature: t=<unix>,v1=<hex>`, HMAC-SHA256 of `{t}.{body}` keyed by the `whsec_…`
 * secret exactly as the dashboard shows it (it is not decoded), on the hmac engine
 * (catalog/stripe/provider.json). Several v1 items appear while Stripe rolls a secret, and any one
 * matching passes; v0 (test-mode legacy) and unknown items are ignored, as Stripe's library does.
 */
export const stripeHooks: ProviderHooks = { summarize: summarizeStripe };
