/**
 * Cal.com: an HMAC of the raw body alone in X-Cal-Signature-256, no timestamp; checked by the
 * documented comparison. https://cal.com/docs/developing/guides/automation/webhooks
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const calComCase = bodyHmacCase({
  preset: 'cal-com',
  sample: 'booking-created',
  header: 'X-Cal-Signature-256',
  written: '<hex sha256>',
  eventType: 'BOOKING_CREATED',
});
