/**
 * Netlify: `X-Webhook-Signature`, a JWS signed HS256 with the webhook's JWS secret, claims
 * `iss: netlify` and `sha256` (hex of the body). Netlify publishes no package; its documented
 * check (jsonwebtoken.verify with issuer netlify and HS256 only, then the body's SHA-256 against
 * the claim) is run here as published.
 * https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature
 */
import { createHash } from 'node:crypto';
import jsonwebtoken from 'jsonwebtoken';
import { jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

const sha256Hex = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

export const netlifyCase: ProviderCase = {
  preset: 'netlify',
  credential: 'secret',
  secret: 'netlify-jws-secret-current',
  wrongSecret: 'netlify-jws-secret-wrong',
  deliver(secret) {
    const body = samplePayload('netlify-deploy-ready.json');
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
