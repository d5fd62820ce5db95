/**
 * Lemon Squeezy: an HMAC of the raw body alone in X-Signature, no timestamp; checked by the
 * documented comparison. https://docs.lemonsqueezy.com/help/webhooks/signing-requests
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const lemonSqueezyCase = bodyHmacCase({
  preset: 'lemon-squeezy',
  sample: 'order-created',
  header: 'X-Signature',
  written: '<hex sha256>',
  eventType: 'order_created',
  otherHeaders: () => ({ 'x-event-name': 'order_created' }),
});
