/**
 * Upstash QStash: `Upstash-Signature`, a JWT signed HS256 with the current (or next) signing key,
 * claims iss Upstash, sub (the URL it called), exp/nbf, and body (base64url SHA-256 of the body).
 * @upstash/qstash only verifies (Receiver), so switchboard's test signer is first shown to pass it.
 * https://upstash.com/docs/qstash/howto/signature
 */
import { createHash, randomUUID } from 'node:crypto';
import { Receiver } from '@upstash/qstash';
import jsonwebtoken from 'jsonwebtoken';
import {
  jsonDelivery,
  type ProviderCase,
  PUBLIC_URL,
  sharedSecret,
} from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

const URL = `${PUBLIC_URL}upstash-qstash`;

export const upstashQstashCase: ProviderCase = {
  preset: 'upstash-qstash',
  config: { public_url: URL },
  ...sharedSecret('upstash-qstash-signing-key'),
  deliver(secret, atMs) {
    const body = samplePayload('upstash-qstash', 'message.json');
    const now = Math.floor(atMs / 1000);
    const claims = {
      iss: 'Upstash',
      sub: URL,
      iat: now,
      nbf: now,
      exp: now + 300,
      jti: `jwt_${randomUUID()}`,
      body: createHash('sha256').update(body).digest('base64url'),
    };
    return jsonDelivery(body, {
      'upstash-message-id': `msg_${randomUUID()}`,
      'upstash-signature': jsonwebtoken.sign(claims, secret, { algorithm: 'HS256' }),
    });
  },
  async accepts({ body, headers }, secret) {
    const receiver = new Receiver({ currentSigningKey: secret, nextSigningKey: `${secret}-next`, devMode: false });
    try {
      return await receiver.verify({ signature: headers['upstash-signature'] ?? '', body: body.toString(), url: URL });
    } catch {
      return false;
    }
  },
  timestamped: true,
  requiredHeader: 'Upstash-Signature',
  eventType: 'report.requested',
  proof: 'package-verifies',
};
