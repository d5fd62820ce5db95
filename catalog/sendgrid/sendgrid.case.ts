/**
 * SendGrid's Signed Event Webhook: `X-Twilio-Email-Event-Webhook-Signature`, ECDSA P-256 SHA-256
 * (base64 DER) over `{X-Twilio-Email-Event-Webhook-Timestamp}{body}`, checked with the
 * verification key SendGrid shows (base64 DER SubjectPublicKeyInfo). @sendgrid/eventwebhook only
 * verifies, so deliveries are signed here with a node:crypto key.
 * https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features
 */
import { randomUUID } from 'node:crypto';
import { EventWebhook } from '@sendgrid/eventwebhook';
import { p256Pair, signTimestamped } from '../../test/verify/providers/key-pairs.ts';
import { jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';

const current = p256Pair();
const other = p256Pair();
const eventWebhook = new EventWebhook();

export const sendgridCase: ProviderCase = {
  preset: 'sendgrid',
  credential: 'public_key',
  secret: current.text,
  wrongSecret: other.text,
  deliver(publicKey, atMs) {
    const seconds = Math.floor(atMs / 1000);
    const body = Buffer.from(
      JSON.stringify([
        {
          email: 'ada@example.org',
          timestamp: seconds,
          event: 'delivered',
          'smtp-id': '<14c5d75ce93.dfd.64b469@ismtpd-555>',
          sg_event_id: randomUUID(),
          sg_message_id: '14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0',
          response: '250 OK',
        },
        {
          email: 'ada@example.org',
          timestamp: seconds,
          event: 'open',
          sg_event_id: randomUUID(),
          useragent: 'Mozilla/5.0',
        },
      ]),
    );
    const { timestamp, signature } = signTimestamped(publicKey, atMs, body);
    return jsonDelivery(body, {
      'x-twilio-email-event-webhook-signature': signature.toString('base64'),
      'x-twilio-email-event-webhook-timestamp': timestamp,
      'user-agent': 'SendGrid Event API',
    });
  },
  accepts({ body, headers }, publicKey) {
    try {
      return eventWebhook.verifySignature(
        eventWebhook.convertPublicKeyToECDSA(publicKey),
        body,
        headers['x-twilio-email-event-webhook-signature'] ?? '',
        headers['x-twilio-email-event-webhook-timestamp'] ?? '',
      );
    } catch {
      return false;
    }
  },
  timestamped: true,
  requiredHeader: 'X-Twilio-Email-Event-Webhook-Signature',
  eventType: 'delivered',
  proof: 'package-verifies',
};
