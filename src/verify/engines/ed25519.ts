/** Ed25519 over a template (Discord, Telnyx): checked with the provider's public key, never signed here. */
import { createEd25519Scheme } from '../schemes/public-key-schemes.ts';
import { code, defineEngine } from './engine.ts';

export const ed25519Engine = defineEngine<'ed25519'>({
  kind: 'ed25519',
  credentialKeys: ['public_key'],
  signatureHeaders: (scheme) => [scheme.signature_header],
  privateKeyAlgorithm: 'an Ed25519',
  build: ({ scheme, where }) => ({ ...createEd25519Scheme(scheme, where), sensitiveHeaders: [] }),
  docs: {
    scheme: (scheme) => `Ed25519 of ${code(scheme.signed)}`,
    headers: (scheme) => [scheme.signature_header, scheme.timestamp_header].map(code).join(', '),
    timestamped: () => true,
  },
});
