/**
 * Signatures that travel inside the JSON body (Mailgun's `signature`, Adyen's per-item
 * `hmacSignature`): nothing in the headers to require or redact, and the body is signed in place.
 */
import { createBodySignatureScheme } from '../schemes/body-signature-scheme.ts';
import { defineEngine } from './engine.ts';

export const bodySignatureEngine = defineEngine<'body-signature'>({
  kind: 'body-signature',
  build: ({ scheme }) => createBodySignatureScheme(scheme),
  docs: {
    scheme: (scheme) =>
      scheme.variant === 'mailgun'
        ? 'HMAC-SHA256 hex of `signature.timestamp` + `signature.token` (in the body)'
        : 'HMAC-SHA256 base64 per notification item (in the body), hex-decoded key',
    headers: (scheme) => (scheme.variant === 'mailgun' ? 'body `signature`' : 'body `additionalData.hmacSignature`'),
    timestamped: (scheme) => scheme.variant === 'mailgun',
  },
});
