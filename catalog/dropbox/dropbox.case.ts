/**
 * Dropbox: an HMAC of the raw body alone in X-Dropbox-Signature, no timestamp; checked by the
 * documented comparison. https://www.dropbox.com/developers/reference/webhooks (the app secret)
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const dropboxCase = bodyHmacCase({
  preset: 'dropbox',
  sample: 'list-folder',
  header: 'X-Dropbox-Signature',
  written: '<hex sha256>',
  eventType: 'list_folder',
});
