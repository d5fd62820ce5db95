/**
 * GitLab: the webhook's secret token, sent as it is in X-Gitlab-Token; nothing is signed, so a
 * changed body is not a failed check. The receiver GitLab documents compares the header with the
 * token it set. https://docs.gitlab.com/user/project/integrations/webhooks/#validate-payloads-by-using-a-secret-token
 */
import { randomUUID } from 'node:crypto';
import { jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const gitlabCase: ProviderCase = {
  preset: 'gitlab',
  credential: 'token',
  secret: 'gitlab-secret-token',
  wrongSecret: 'gitlab-wrong-token',
  deliver: (token) =>
    jsonDelivery(samplePayload('gitlab', 'push.json'), {
      'x-gitlab-token': token,
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-event-uuid': randomUUID(),
      'idempotency-key': randomUUID(),
    }),
  accepts: ({ headers }, token) => headers['x-gitlab-token'] === token,
  timestamped: false,
  requiredHeader: 'X-Gitlab-Token',
  eventType: 'push',
  bodyUnsigned: true,
  proof: 'example',
};
