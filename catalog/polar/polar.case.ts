/**
 * Polar: Standard Webhooks (webhook-* headers) whose key is the secret's own text. @polar-sh/sdk
 * only verifies (validateEvent, which base64-encodes the secret for standardwebhooks), so
 * deliveries are signed by the standardwebhooks package with that same key.
 * https://docs.polar.sh/integrate/webhooks/delivery
 */
import { validateEvent, WebhookVerificationError } from '@polar-sh/sdk/webhooks';
import type { ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { signFamily } from '../../test/verify/providers/standard-webhooks-family.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

const asStandardKey = (secret: string): string => Buffer.from(secret, 'utf8').toString('base64');

export const polarCase: ProviderCase = {
  preset: 'polar',
  credential: 'secret',
  secret: 'polar_whs_switchboardCurrentSecret0001',
  wrongSecret: 'polar_whs_switchboardWrongSecret00002',
  deliver: (secret, atMs) =>
    signFamily('webhook', asStandardKey(secret), samplePayload('polar', 'order-paid.json'), atMs),
  accepts({ body, headers }, secret) {
    try {
      validateEvent(body.toString('utf8'), headers, secret);
      return true;
    } catch (error) {
      // Past the signature the SDK also parses the event into its own model; a trimmed sample may
      // fail that, which says nothing about the signature: only a verification error is a refusal.
      return !(error instanceof WebhookVerificationError);
    }
  },
  timestamped: true,
  requiredHeader: 'webhook-timestamp',
  eventType: 'order.paid',
  proof: 'package-verifies',
};
