/**
 * Telnyx: `telnyx-signature-ed25519` (base64) over `{telnyx-timestamp}|{body}`, checked with the
 * public key from Mission Control (base64). The telnyx package only verifies
 * (client.webhooks.unwrap), so deliveries are signed here with a node:crypto key.
 * https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks
 */
import { randomUUID } from 'node:crypto';
import Telnyx from 'telnyx';
import { ed25519Pair, signTimestamped } from '../../test/verify/providers/key-pairs.ts';
import { jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { isoSeconds } from '../../test/verify/providers/timed-case.ts';

const current = ed25519Pair('base64');
const other = ed25519Pair('base64');
const telnyx = new Telnyx({ apiKey: 'KEY_switchboard_test' });

export const telnyxCase: ProviderCase = {
  preset: 'telnyx',
  credential: 'public_key',
  secret: current.text,
  wrongSecret: other.text,
  deliver(publicKey, atMs) {
    const body = Buffer.from(
      JSON.stringify({
        data: {
          event_type: 'message.received',
          id: randomUUID(),
          occurred_at: isoSeconds(atMs),
          payload: {
            id: randomUUID(),
            direction: 'inbound',
            from: { phone_number: '+13125550001', carrier: 'T-Mobile USA', line_type: 'Wireless' },
            to: [{ phone_number: '+17735550002', status: 'webhook_delivered' }],
            text: 'Hello from Telnyx!',
            type: 'SMS',
          },
          record_type: 'event',
        },
        meta: { attempt: 1, delivered_to: 'https://hooks.example.com/hooks/telnyx' },
      }),
    );
    const { timestamp, signature } = signTimestamped(publicKey, atMs, body, '|');
    return jsonDelivery(body, {
      'telnyx-signature-ed25519': signature.toString('base64'),
      'telnyx-timestamp': timestamp,
    });
  },
  accepts: ({ body, headers }, publicKey) =>
    telnyx.webhooks.unwrap(body.toString('utf8'), { headers, key: publicKey }).then(
      () => true,
      () => false,
    ),
  timestamped: true,
  requiredHeader: 'telnyx-timestamp',
  eventType: 'message.received',
  proof: 'package-verifies',
};
