/**
 * DocuSign: an HMAC of the raw body alone in X-DocuSign-Signature-1, no timestamp; checked by the
 * documented comparison. https://developers.docusign.com/platform/webhooks/connect/hmac/ (one
 * header per key)
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const docusignCase = bodyHmacCase({
  preset: 'docusign',
  sample: 'envelope-completed',
  header: 'X-DocuSign-Signature-1',
  written: '<base64 sha256>',
  eventType: 'envelope-completed',
});
