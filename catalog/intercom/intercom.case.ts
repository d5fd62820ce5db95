/**
 * Intercom: an HMAC of the raw body alone in X-Hub-Signature, no timestamp; checked by the
 * documented comparison. https://developers.intercom.com/docs/references/webhooks/webhook-models
 * (the client secret)
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const intercomCase = bodyHmacCase({
  preset: 'intercom',
  sample: 'conversation-user-created',
  header: 'X-Hub-Signature',
  written: 'sha1=<hex sha1>',
  eventType: 'conversation.user.created',
});
