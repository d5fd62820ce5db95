/**
 * Twilio: `X-Twilio-Signature`, base64 HMAC-SHA1 (the Auth Token) over the URL Twilio called and
 * the form fields sorted by name. The twilio package signs (getExpectedTwilioSignature) and
 * verifies (validateRequest); only its webhooks module is loaded, the whole SDK is slow to import.
 * https://www.twilio.com/docs/usage/webhooks/webhooks-security
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { PUBLIC_URL, type ProviderCase } from '../../test/verify/providers/provider-case.ts';

export interface TwilioWebhooks {
  getExpectedTwilioSignature(token: string, url: string, params: Record<string, string>, algorithm?: string): string;
  validateRequest(
    token: string,
    signature: string,
    url: string,
    params: Record<string, string>,
    algorithm?: string,
  ): boolean;
  validateRequestWithBody(token: string, signature: string, url: string, body: string, algorithm?: string): boolean;
}
const require = createRequire(import.meta.url);
export const webhooks = require('twilio/lib/webhooks/webhooks.js') as TwilioWebhooks;

export const TWILIO_URL = `${PUBLIC_URL}twilio`;

/** The sample's form fields, with a fresh MessageSid so each delivery is a new message. */
export function twilioForm(): Record<string, string> {
  const text = readFileSync(new URL('./message-received.txt', import.meta.url), 'utf8');
  const sid = `SM${randomUUID().replaceAll('-', '')}`;
  return { ...Object.fromEntries(new URLSearchParams(text.trim())), MessageSid: sid, SmsSid: sid, SmsMessageSid: sid };
}

export const formFields = (body: Buffer): Record<string, string> =>
  Object.fromEntries(new URLSearchParams(body.toString('utf8')));

export const twilioCase: ProviderCase = {
  preset: 'twilio',
  config: { public_url: TWILIO_URL },
  credential: 'secret',
  secret: '12345678901234567890123456789012',
  wrongSecret: 'fedcba98765432100123456789abcdef',
  deliver(secret) {
    const params = twilioForm();
    return {
      body: Buffer.from(new URLSearchParams(params).toString()),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'i-twilio-idempotency-token': randomUUID(),
        'x-twilio-signature': webhooks.getExpectedTwilioSignature(secret, TWILIO_URL, params),
      },
    };
  },
  accepts({ body, headers }, secret) {
    return webhooks.validateRequest(secret, headers['x-twilio-signature'] ?? '', TWILIO_URL, formFields(body));
  },
  timestamped: false,
  requiredHeader: 'X-Twilio-Signature',
  eventType: 'message.received',
  proof: 'package-signs',
};
