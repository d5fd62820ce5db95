/**
 * HubSpot v3: `X-HubSpot-Signature-v3`, base64 HMAC-SHA256 of method + URL + body + timestamp (ms,
 * in X-HubSpot-Request-Timestamp). @hubspot/api-client verifies (Signature.isValid), so
 * switchboard's test signer passes it first.
 * https://developers.hubspot.com/docs/guides/apps/authentication/validating-requests
 */
import { Signature } from '@hubspot/api-client';
import { hmac, jsonDelivery, type ProviderCase, PUBLIC_URL } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

const URL = `${PUBLIC_URL}hubspot`;

export const hubspotCase: ProviderCase = {
  preset: 'hubspot',
  config: { public_url: URL },
  credential: 'secret',
  secret: 'hubspot-client-secret-current',
  wrongSecret: 'hubspot-client-secret-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('hubspot-contact-creation.json');
    const ts = String(Math.floor(atMs));
    return jsonDelivery(body, {
      'x-hubspot-request-timestamp': ts,
      'x-hubspot-signature-v3': hmac('sha256', secret, ['POST', URL, body, ts], 'base64'),
    });
  },
  accepts({ body, headers }, secret) {
    try {
      return Signature.isValid({
        signatureVersion: 'v3',
        signature: headers['x-hubspot-signature-v3'] ?? '',
        clientSecret: secret,
        requestBody: body.toString('utf8'),
        url: URL,
        method: 'POST',
        timestamp: Number(headers['x-hubspot-request-timestamp']),
      });
    } catch {
      return false;
    }
  },
  timestamped: true,
  requiredHeader: 'X-HubSpot-Signature-v3',
  eventType: 'contact.creation',
  proof: 'package-verifies',
};
