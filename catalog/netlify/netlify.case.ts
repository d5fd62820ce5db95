/**
 * Netlify: `X-Webhook-Signature`, a JWS signed HS256 with the webhook's JWS secret, claims
 * `iss: netlify` and `sha256` (hex of the body). Netlify publishes no package; its documented
 * check (jsonwebtoken.verify with issuer netlify and HS256 only, then the body's SHA-256 against
 * the claim) is run here as published.
 * https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature
 */
import jsonwebtoken from 'jsonwebtoken';
import { jsonDelivery, type ProviderCase, sha256Hex, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const netlifyCase: ProviderCase = {
  preset: 'netlify',
  ...sharedSecret('netlify-jws-secret'),
  deliver(secret) {
    const body = samplePayload('netlify', 'deploy-ready.json');
    const token = jsonwebtoken.sign({ iss: 'netlify', sha256: sha256Hex(body) }, secret, {
      algorithm: 'HS256',
      noTimestamp: true,
    });
    return jsonDelivery(body, { 'x-webhook-signature': token, 'user-agent': 'Netlify' });
  },
  accepts({ body, headers }, secret) {
    try {
      const decoded = jsonwebtoken.verify(headers['x-webhook-signature'] ?? '', secret, {
        issuer: 'netlify',
        algorithms: ['HS256'],
      });
      return typeof decoded === 'object' && decoded['sha256'] === sha256Hex(body);
    } catch {
      return false;
    }
  },
  timestamped: false,
  requiredHeader: 'X-Webhook-Signature',
  eventType: 'deploy.ready',
  proof: 'example',
};
