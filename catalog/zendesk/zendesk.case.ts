/**
 * Zendesk: base64 HMAC-SHA256 of the timestamp, then the body, checked by recomputing it from the
 * delivery's timestamp header. https://developer.zendesk.com/documentation/webhooks/verifying/
 */
import { base64, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { isoSeconds } from '../../test/verify/providers/timed-case.ts';

export const zendeskCase = hmacSchemeCase({
  preset: 'zendesk',
  sample: 'zen-event-type-ticket-created',
  clock: isoSeconds,
  header: 'X-Zendesk-Webhook-Signature',
  eventType: 'zen:event-type:ticket.created',
  sign: (body, secret, at) => ({
    'x-zendesk-webhook-signature-timestamp': at,
    'x-zendesk-webhook-signature': base64(secret, at, body),
  }),
  signedAt: (headers) => headers['x-zendesk-webhook-signature-timestamp'] ?? '',
});
