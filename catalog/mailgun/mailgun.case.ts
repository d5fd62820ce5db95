/**
 * Mailgun: the body's `signature` object, hex HMAC-SHA256 with the webhook signing key of
 * `timestamp` + `token` (Mailgun's documented check, computed here independently of src/). The
 * event data is not signed, so only a change to the signature object fails the check.
 * https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/#securing-webhooks
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { bodyCheck, hmac, jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

export function mailgunBody(key: string, atMs: number, token = randomBytes(25).toString('hex')): Buffer {
  const timestamp = unixSeconds(atMs);
  return Buffer.from(
    JSON.stringify({
      signature: { timestamp, token, signature: hmac('sha256', key, [timestamp, token], 'hex') },
      'event-data': {
        event: 'delivered',
        id: randomUUID(),
        timestamp: Number(timestamp),
        recipient: 'alice@example.com',
        message: { headers: { 'message-id': '20260115120000.1.ABCDEF@mg.example.com', subject: 'Your receipt' } },
      },
    }),
  );
}

export function mailgunAccepts(body: Buffer, key: string): boolean {
  const { signature } = JSON.parse(body.toString('utf8')) as {
    signature?: { timestamp?: string; token?: string; signature?: string };
  };
  if (signature?.timestamp === undefined || signature.token === undefined) return false;
  return hmac('sha256', key, [signature.timestamp, signature.token], 'hex') === signature.signature;
}

export const mailgunCase: ProviderCase = {
  preset: 'mailgun',
  credential: 'secret',
  secret: 'key-mailgun-signing-0123456789abcdef',
  wrongSecret: 'key-mailgun-signing-wrong-fedcba9876',
  deliver: (secret, atMs) => jsonDelivery(mailgunBody(secret, atMs), {}),
  accepts: bodyCheck(mailgunAccepts),
  timestamped: true,
  requiredHeader: null,
  eventType: 'delivered',
  bodyUnsigned: true,
  proof: 'example',
};
