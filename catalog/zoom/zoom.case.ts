/**
 * Zoom: `v0=<hex HMAC-SHA256 of v0:{ts}:{body}>`, checked by recomputing it from the delivery's
 * x-zm-request-timestamp. https://developers.zoom.us/docs/api/webhooks/
 */
import { hex, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

export const zoomCase = hmacSchemeCase({
  preset: 'zoom',
  sample: 'meeting-started',
  clock: unixSeconds,
  header: 'x-zm-signature',
  eventType: 'meeting.started',
  sign: (body, secret, ts) => ({
    'x-zm-request-timestamp': ts,
    'x-zm-signature': `v0=${hex(secret, `v0:${ts}:`, body)}`,
  }),
  signedAt: (headers) => headers['x-zm-request-timestamp'] ?? '',
});
