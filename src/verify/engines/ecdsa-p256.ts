/** ECDSA P-256 with SHA-256 over a template (SendGrid): checked with the public key, never signed here. */
import { createEcdsaScheme } from '../schemes/public-key-schemes.ts';
import { code, defineEngine } from './engine.ts';

export const ecdsaP256Engine = defineEngine<'ecdsa-p256'>({
  kind: 'ecdsa-p256',
  credentialKeys: ['public_key'],
  signatureHeaders: (scheme) => [scheme.signature_header],
  privateKeyAlgorithm: 'an ECDSA P-256',
  build: ({ scheme, where }) => ({ ...createEcdsaScheme(scheme, where), sensitiveHeaders: [] }),
  docs: {
    scheme: (scheme) => `ECDSA P-256 SHA-256 of ${code(scheme.signed)}`,
    headers: (scheme) => [scheme.signature_header, scheme.timestamp_header].map(code).join(', '),
    timestamped: () => true,
  },
});
