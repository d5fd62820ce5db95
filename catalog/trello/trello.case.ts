/**
 * Trello: base64 HMAC-SHA1 of the body, then the callback URL; no timestamp. Checked by the
 * documented comparison. https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/
 */
import { hmac } from '../../test/verify/providers/provider-case.ts';
import { hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';

export const trelloCase = hmacSchemeCase({
  preset: 'trello',
  sample: 'createcard',
  clock: null,
  header: 'X-Trello-Webhook',
  eventType: 'createCard',
  sign: (body, secret, _at, url) => ({ 'x-trello-webhook': hmac('sha1', secret, [body, url], 'base64') }),
  signsUrl: true,
});
