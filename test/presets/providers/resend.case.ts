/**
 * Resend: sends through Svix (svix-* headers, whsec_ secret). The resend package only verifies
 * (resend.webhooks.verify), so deliveries are signed by the svix package and resend checks them.
 * https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests
 */
import { Resend } from 'resend';
import type { ProviderCase } from './provider-case.ts';
import { passes, signFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

const resend = new Resend('re_switchboard_test');

export const resendCase: ProviderCase = {
  preset: 'resend',
  credential: 'secret',
  secret: `whsec_${Buffer.from('resend webhook secret, current').toString('base64')}`,
  wrongSecret: `whsec_${Buffer.from('resend webhook secret, wrong').toString('base64')}`,
  deliver: (secret, atMs) => signFamily('svix', secret, samplePayload('resend-email-delivered.json'), atMs),
  accepts: ({ body, headers }, secret) =>
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
  timestamped: true,
  requiredHeader: 'svix-timestamp',
  eventType: 'email.delivered',
  proof: 'package-verifies',
};
