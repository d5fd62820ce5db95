/**
 * Meta (Facebook, Instagram, WhatsApp; the app secret): an HMAC of the raw body alone in
 * X-Hub-Signature-256, no timestamp; checked by the documented comparison.
 * https://developers.facebook.com/docs/graph-api/webhooks/getting-started
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const metaCase = bodyHmacCase({
  preset: 'meta',
  sample: 'whatsapp-business-account-messages',
  header: 'X-Hub-Signature-256',
  written: 'sha256=<hex sha256>',
  eventType: 'whatsapp_business_account.messages',
});
