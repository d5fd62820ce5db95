/**
 * WooCommerce: an HMAC of the raw body alone in X-WC-Webhook-Signature, no timestamp; checked by
 * the documented comparison. https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks
 */
import { randomUUID } from 'node:crypto';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const woocommerceCase = bodyHmacCase({
  preset: 'woocommerce',
  sample: 'order-created',
  header: 'X-WC-Webhook-Signature',
  written: '<base64 sha256>',
  eventType: 'order.created',
  otherHeaders: () => ({
    'x-wc-webhook-topic': 'order.created',
    'x-wc-webhook-resource': 'order',
    'x-wc-webhook-event': 'created',
    'x-wc-webhook-delivery-id': randomUUID(),
    'x-wc-webhook-id': '12',
    'x-wc-webhook-source': 'https://shop.example.com/',
  }),
});
