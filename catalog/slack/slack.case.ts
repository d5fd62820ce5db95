/**
 * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{body}`
 * (Slack's documented scheme, computed here independently of src/). @slack/bolt only verifies
 * (isValidSlackRequest, the check Bolt's receivers run), so it first accepts this signer's output.
 * https://api.slack.com/authentication/verifying-requests-from-slack
 */
import { isValidSlackRequest } from '@slack/bolt';
import { hmac, jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload, unixSeconds } from '../../test/verify/providers/timed-case.ts';

export const slackCase: ProviderCase = {
  preset: 'slack',
  ...sharedSecret('slack-signing-secret'),
  deliver(secret, atMs) {
    const body = samplePayload('slack', 'app-mention.json');
    const ts = unixSeconds(atMs);
    return jsonDelivery(body, {
      'x-slack-request-timestamp': ts,
      'x-slack-signature': `v0=${hmac('sha256', secret, [`v0:${ts}:`, body], 'hex')}`,
    });
  },
  accepts({ body, headers }, secret) {
    return isValidSlackRequest({
      signingSecret: secret,
      body: body.toString('utf8'),
      headers: {
        'x-slack-signature': headers['x-slack-signature'] ?? '',
        'x-slack-request-timestamp': Number(headers['x-slack-request-timestamp']),
      },
    });
  },
  timestamped: true,
  requiredHeader: 'X-Slack-Signature',
  eventType: 'app_mention',
  proof: 'package-verifies',
};
