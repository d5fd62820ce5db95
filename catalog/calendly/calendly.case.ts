/**
 * Calendly: `t=<unix>,v1=<hex HMAC-SHA256 of {t}.{body}>`, checked by recomputing it from the
 * delivery's t, as the documentation says a receiver does.
 * https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures
 */
import { hex, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

export const calendlyCase = hmacSchemeCase({
  preset: 'calendly',
  sample: 'invitee-created',
  clock: unixSeconds,
  header: 'Calendly-Webhook-Signature',
  eventType: 'invitee.created',
  sign: (body, secret, t) => ({ 'calendly-webhook-signature': `t=${t},v1=${hex(secret, `${t}.`, body)}` }),
  signedAt: (headers) => /t=(\d+)/.exec(headers['calendly-webhook-signature'] ?? '')?.[1] ?? '',
});
