/**
 * The Standard Webhooks family (Svix, Clerk, Resend, OpenAI, Replicate, Polar): one scheme, base64
 * HMAC-SHA256 of `{id}.{timestamp}.{body}` under webhook-* or svix-* names. Each member's case
 * signs with the library its sender uses (svix or standardwebhooks) and checks with the member's
 * own package where it has one that verifies.
 */
import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import type { Signed } from './provider-case.ts';

export type HeaderFamily = 'svix' | 'webhook';

/** A delivery as the svix or standardwebhooks package signs it, sent at `atMs`. */
export function signFamily(family: HeaderFamily, secret: string, body: Buffer, atMs: number): Signed {
  const id = `msg_${randomUUID().replace(/-/g, '')}`;
  const at = new Date(Math.floor(atMs / 1000) * 1000);
  const payload = body.toString('utf8');
  const signature =
    family === 'svix'
      ? new SvixWebhook(secret).sign(id, at, payload)
      : new StandardWebhook(secret).sign(id, at, payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      [`${family}-id`]: id,
      [`${family}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
      [`${family}-signature`]: signature,
    },
  };
}

/** Whether a throwing verifier accepted: it returns (true) or throws (false). */
export async function passes(check: () => unknown): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}
