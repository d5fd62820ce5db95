/**
 * PagerDuty (a list of `v1=` items): an HMAC of the raw body alone in X-PagerDuty-Signature, no
 * timestamp; checked by the documented comparison.
 * https://developer.pagerduty.com/docs/webhooks/webhook-signatures
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const pagerdutyCase = bodyHmacCase({
  preset: 'pagerduty',
  sample: 'incident-triggered',
  header: 'X-PagerDuty-Signature',
  written: 'v1=<hex sha256>',
  eventType: 'incident.triggered',
  otherHeaders: () => ({ 'x-webhook-subscription': 'PS1234' }),
});
