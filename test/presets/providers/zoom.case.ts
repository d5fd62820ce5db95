/**
 * Zoom: `x-zm-signature: v0=<hex>`, HMAC-SHA256 of `v0:{ts}:{body}` with the secret token, the
 * timestamp in `x-zm-request-timestamp` (Zoom's documented scheme, computed independently).
 * https://developers.zoom.us/docs/api/webhooks/
 */
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

export const zoomCase: ProviderCase = {
  preset: 'zoom',
  credential: 'secret',
  secret: 'zoom-secret-token-current',
  wrongSecret: 'zoom-secret-token-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('zoom-meeting-started.json');
    const ts = unixSeconds(atMs);
    return jsonDelivery(body, {
      'x-zm-request-timestamp': ts,
      'x-zm-signature': `v0=${hmac('sha256', secret, [`v0:${ts}:`, body], 'hex')}`,
    });
  },
  accepts({ body, headers }, secret) {
    const ts = headers['x-zm-request-timestamp'] ?? '';
    return headers['x-zm-signature'] === `v0=${hmac('sha256', secret, [`v0:${ts}:`, body], 'hex')}`;
  },
  timestamped: true,
  requiredHeader: 'x-zm-signature',
  eventType: 'meeting.started',
  proof: 'example',
};
