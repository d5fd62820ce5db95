/**
 * Typeform: an HMAC of the raw body alone in Typeform-Signature, no timestamp; checked by the
 * documented comparison. https://www.typeform.com/developers/webhooks/secure-your-webhooks/
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const typeformCase = bodyHmacCase({
  preset: 'typeform',
  sample: 'form-response',
  header: 'Typeform-Signature',
  written: 'sha256=<base64 sha256>',
  eventType: 'form_response',
});
