/**
 * Notion (the verification token): an HMAC of the raw body alone in X-Notion-Signature, no
 * timestamp; checked by the documented comparison. https://developers.notion.com/reference/webhooks
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const notionCase = bodyHmacCase({
  preset: 'notion',
  sample: 'page-created',
  header: 'X-Notion-Signature',
  written: 'sha256=<hex sha256>',
  eventType: 'page.created',
});
