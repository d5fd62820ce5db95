/**
 * Twilio Segment: an HMAC of the raw body alone in X-Signature, no timestamp; checked by the
 * documented comparison. https://segment.com/docs/connections/destinations/catalog/webhooks/
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const segmentCase = bodyHmacCase({
  preset: 'segment',
  sample: 'track',
  header: 'X-Signature',
  written: '<hex sha1>',
  eventType: 'track',
});
