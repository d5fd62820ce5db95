/**
 * GoCardless: an HMAC of the raw body alone in Webhook-Signature, no timestamp; checked by
 * gocardless-nodejs's own verifier.
 * https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks
 */
import { verifySignature } from 'gocardless-nodejs/webhooks';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const gocardlessCase = bodyHmacCase({
  preset: 'gocardless',
  sample: 'payments-confirmed',
  header: 'Webhook-Signature',
  written: '<hex sha256>',
  eventType: 'payments.confirmed',
  verifier: (body, signature, secret) => {
    try {
      verifySignature(body, secret, signature);
      return true;
    } catch {
      return false;
    }
  },
});
