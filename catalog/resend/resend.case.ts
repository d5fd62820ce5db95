/**
 * Resend: delivered through Svix (svix-* headers), signed by svix and checked by the resend
 * package's resend.webhooks.verify.
 * https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests
 */
import { Resend } from 'resend';
import { familyCase, passes } from '../../test/verify/providers/standard-webhooks-family.ts';

const resend = new Resend('re_switchboard_test');

export const resendCase = familyCase({
  preset: 'resend',
  family: 'svix',
  sample: 'email-delivered',
  requiredHeader: 'svix-timestamp',
  eventType: 'email.delivered',
  verifier: ({ body, headers }, secret) =>
    passes(() =>
      resend.webhooks.verify({
        payload: body.toString('utf8'),
        headers: {
          id: headers['svix-id'] ?? '',
          timestamp: headers['svix-timestamp'] ?? '',
          signature: headers['svix-signature'] ?? '',
        },
        webhookSecret: secret,
      }),
    ),
});
