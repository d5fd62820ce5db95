/**
 * Jira Cloud: an HMAC of the raw body alone in X-Hub-Signature, no timestamp; checked by the
 * documented comparison. https://developer.atlassian.com/cloud/jira/platform/webhooks/
 */
import { randomUUID } from 'node:crypto';
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const jiraCase = bodyHmacCase({
  preset: 'jira',
  sample: 'jira-issue-created',
  header: 'X-Hub-Signature',
  written: 'sha256=<hex sha256>',
  eventType: 'jira:issue_created',
  otherHeaders: () => ({ 'x-atlassian-webhook-identifier': randomUUID() }),
});
