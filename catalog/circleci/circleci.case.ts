/**
 * CircleCI: an HMAC of the raw body alone in circleci-signature, no timestamp; checked by the
 * documented comparison. https://circleci.com/docs/webhooks/ (a `v1=` item)
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const circleciCase = bodyHmacCase({
  preset: 'circleci',
  sample: 'workflow-completed',
  header: 'circleci-signature',
  written: 'v1=<hex sha256>',
  eventType: 'workflow-completed',
  otherHeaders: () => ({ 'circleci-event-type': 'workflow-completed' }),
});
