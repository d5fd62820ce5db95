/**
 * Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=<hex>`, HMAC-SHA256 of message id +
 * timestamp + body (Twitch's documented scheme, computed independently of src/).
 * https://dev.twitch.tv/docs/eventsub/handling-webhook-events/
 */
import { randomUUID } from 'node:crypto';
import { hmac, jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { isoSeconds, samplePayload } from '../../test/verify/providers/timed-case.ts';

const signature = (body: Buffer, secret: string, id: string, ts: string): string =>
  `sha256=${hmac('sha256', secret, [id, ts, body], 'hex')}`;

export const twitchCase: ProviderCase = {
  preset: 'twitch',
  ...sharedSecret('twitch-eventsub-secret'),
  deliver(secret, atMs) {
    const body = samplePayload('twitch', 'channel-follow.json');
    const id = randomUUID();
    // Twitch writes RFC 3339 with nanoseconds.
    const ts = isoSeconds(atMs).replace('Z', '.123456789Z');
    return jsonDelivery(body, {
      'twitch-eventsub-message-id': id,
      'twitch-eventsub-message-timestamp': ts,
      'twitch-eventsub-message-type': 'notification',
      'twitch-eventsub-message-signature': signature(body, secret, id, ts),
    });
  },
  accepts({ body, headers }, secret) {
    const id = headers['twitch-eventsub-message-id'] ?? '';
    const ts = headers['twitch-eventsub-message-timestamp'] ?? '';
    return headers['twitch-eventsub-message-signature'] === signature(body, secret, id, ts);
  },
  timestamped: true,
  requiredHeader: 'Twitch-Eventsub-Message-Signature',
  eventType: 'channel.follow',
  proof: 'example',
};
