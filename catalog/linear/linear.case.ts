/**
 * Linear: `Linear-Signature: <hex>`, HMAC-SHA256 of the raw body, whose own `webhookTimestamp`
 * (ms) is the signed timestamp. @linear/sdk only verifies (LinearWebhookClient.verify, which also
 * holds webhookTimestamp to a minute of its clock), so the signer here, written from Linear's
 * documentation independently of src/, is first shown to pass it.
 * https://linear.app/developers/webhooks#securing-webhooks
 */
import { randomUUID } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import {
  hmac,
  jsonDelivery,
  type ProviderCase,
  sharedSecret,
  type Signed,
} from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

/** A Linear delivery sent at `atMs`: the body carries the time, the header the body's HMAC. */
export function linearDelivery(secret: string, atMs: number): Signed {
  const payload = JSON.parse(samplePayload('linear', 'issue-create.json').toString('utf8')) as object;
  const body = Buffer.from(JSON.stringify({ ...payload, webhookTimestamp: Math.floor(atMs) }));
  return jsonDelivery(body, {
    'linear-signature': hmac('sha256', secret, [body], 'hex'),
    'linear-delivery': randomUUID(),
    'linear-event': 'Issue',
  });
}

/** @linear/sdk's check: the signature, then webhookTimestamp against its own clock. */
export function linearAccepts({ body, headers }: Signed, secret: string): boolean {
  try {
    return new LinearWebhookClient(secret).verify(body, headers['linear-signature'] ?? '');
  } catch {
    return false;
  }
}

export const linearCase: ProviderCase = {
  preset: 'linear',
  ...sharedSecret('lin_wh_linear-signing-secret'),
  deliver: linearDelivery,
  accepts: linearAccepts,
  timestamped: true,
  timestampInBody: true,
  requiredHeader: 'Linear-Signature',
  eventType: 'Issue.create',
  proof: 'package-verifies',
};
