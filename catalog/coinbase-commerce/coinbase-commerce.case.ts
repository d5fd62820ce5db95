/**
 * Coinbase Commerce: an HMAC of the raw body alone in X-CC-Webhook-Signature, no timestamp; checked
 * by coinbase-commerce-node's own verifier.
 * https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security
 */
import coinbase from 'coinbase-commerce-node';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const coinbaseCommerceCase = bodyHmacCase({
  preset: 'coinbase-commerce',
  sample: 'charge-confirmed',
  header: 'X-CC-Webhook-Signature',
  written: '<hex sha256>',
  eventType: 'charge:confirmed',
  verifier: (body, signature, secret) => {
    try {
      return coinbase.Webhook.verifySigHeader(body.toString('utf8'), signature, secret);
    } catch {
      return false;
    }
  },
});
