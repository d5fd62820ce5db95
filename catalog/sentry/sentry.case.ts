/**
 * Sentry (the client secret): an HMAC of the raw body alone in Sentry-Hook-Signature, no timestamp;
 * checked by the documented comparison.
 * https://docs.sentry.io/organization/integrations/integration-platform/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

export const sentryCase = bodyHmacCase({
  preset: 'sentry',
  sample: 'issue-created',
  header: 'Sentry-Hook-Signature',
  written: '<hex sha256>',
  eventType: 'issue.created',
  otherHeaders: (atMs) => ({
    'sentry-hook-resource': 'issue',
    'sentry-hook-timestamp': unixSeconds(atMs),
    'request-id': randomUUID(),
  }),
});
