/**
 * Zendesk: `X-Zendesk-Webhook-Signature`, base64 HMAC-SHA256 of timestamp + body, the timestamp in
 * `X-Zendesk-Webhook-Signature-Timestamp` (Zendesk's documented scheme, computed independently).
 * https://developer.zendesk.com/documentation/webhooks/verifying/
 */
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { isoSeconds, samplePayload } from './timed-case.ts';

export const zendeskCase: ProviderCase = {
  preset: 'zendesk',
  credential: 'secret',
  // Zendesk's documented signing secret for test webhooks.
  secret: 'dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ==',
  wrongSecret: 'zendesk-wrong-secret',
  deliver(secret, atMs) {
    const body = samplePayload('zendesk-zen-event-type-ticket-created.json');
    const ts = isoSeconds(atMs);
    return jsonDelivery(body, {
      'x-zendesk-webhook-signature-timestamp': ts,
      'x-zendesk-webhook-signature': hmac('sha256', secret, [ts, body], 'base64'),
    });
  },
  accepts({ body, headers }, secret) {
    const ts = headers['x-zendesk-webhook-signature-timestamp'] ?? '';
    return headers['x-zendesk-webhook-signature'] === hmac('sha256', secret, [ts, body], 'base64');
  },
  timestamped: true,
  requiredHeader: 'X-Zendesk-Webhook-Signature',
  eventType: 'zen:event-type:ticket.created',
  proof: 'example',
};
