/**
 * Vonage: `Authorization: Bearer <jwt>`, signed HS256 with the signature secret, claims iss
 * Vonage, iat, jti and payload_hash (hex SHA-256 of the body). @vonage/jwt only verifies the token
 * (verifySignature); the payload_hash is compared as Vonage documents. Switchboard's test signer
 * is first shown to pass both.
 * https://developer.vonage.com/en/getting-started/concepts/webhooks#validating-signed-webhooks
 */
import { randomUUID } from 'node:crypto';
import { verifySignature } from '@vonage/jwt';
import jsonwebtoken from 'jsonwebtoken';
import { jsonDelivery, type ProviderCase, sha256Hex, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const vonageCase: ProviderCase = {
  preset: 'vonage',
  ...sharedSecret('vonage-signature-secret-0123456789'),
  deliver(secret, atMs) {
    const body = samplePayload('vonage', 'inbound-sms.json');
    const claims = {
      iat: Math.floor(atMs / 1000),
      jti: randomUUID(),
      iss: 'Vonage',
      payload_hash: sha256Hex(body),
      api_key: 'abcd1234',
      application_id: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab',
    };
    const token = jsonwebtoken.sign(claims, secret, { algorithm: 'HS256' });
    return jsonDelivery(body, { authorization: `Bearer ${token}` });
  },
  accepts({ body, headers }, secret) {
    const token = (headers['authorization'] ?? '').replace(/^Bearer /, '');
    if (!verifySignature(token, secret)) return false;
    const claims = jsonwebtoken.decode(token);
    return typeof claims === 'object' && claims?.['payload_hash'] === sha256Hex(body);
  },
  timestamped: true,
  requiredHeader: 'Authorization',
  eventType: 'sms.text',
  proof: 'package-verifies',
};
