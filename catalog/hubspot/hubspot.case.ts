/**
 * HubSpot (v3): base64 HMAC-SHA256 of the method, the URL it called, the body and a timestamp in
 * ms; @hubspot/api-client's Signature.isValid checks it.
 * https://developers.hubspot.com/docs/guides/apps/authentication/validating-requests
 */
import { Signature } from '@hubspot/api-client';
import { base64, hmacSchemeCase, msString } from '../../test/verify/providers/hmac-scheme-case.ts';

export const hubspotCase = hmacSchemeCase({
  preset: 'hubspot',
  sample: 'contact-creation',
  clock: msString,
  header: 'X-HubSpot-Signature-v3',
  eventType: 'contact.creation',
  sign: (body, secret, at, url) => ({
    'x-hubspot-request-timestamp': at,
    'x-hubspot-signature-v3': base64(secret, 'POST', url, body, at),
  }),
  verifier: ({ body, headers }, clientSecret, url) => {
    try {
      return Signature.isValid({
        signatureVersion: 'v3',
        signature: headers['x-hubspot-signature-v3'] ?? '',
        clientSecret,
        requestBody: body.toString('utf8'),
        url,
        method: 'POST',
        timestamp: Number(headers['x-hubspot-request-timestamp']),
      });
    } catch {
      return false;
    }
  },
  signsUrl: true,
});
