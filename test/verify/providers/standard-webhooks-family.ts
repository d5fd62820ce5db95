/**
 * The Standard Webhooks family (Standard Webhooks itself, Svix, Clerk, Resend, OpenAI, Replicate,
 * Polar): one scheme, base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under webhook-* or svix-*
 * names. Each member's case (catalog/<preset>/<preset>.case.ts) signs with the library its sender
 * uses (svix or standardwebhooks) and checks with the member's own package where it has one that
 * verifies, otherwise with the svix package its docs verify with. Polar, whose key is the secret's
 * own text, writes its case out in full.
 */
import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import type { PresetName } from '../../../generated/constants.ts';
import type { ProviderCase, Signed } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

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

type Verifier = (delivery: Signed, secret: string) => Promise<boolean> | boolean;

/** The svix package's check, which also signs. */
export const svixVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() => new SvixWebhook(secret).verify(body.toString('utf8'), headers));

/** The standardwebhooks package's check, which also signs. */
export const standardVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() => new StandardWebhook(secret).verify(body.toString('utf8'), headers));

/** The packages that sign as well as verify: the case is their code on both sides. */
const SIGNING_PACKAGES: readonly Verifier[] = [svixVerifies, standardVerifies];

export interface FamilyMember {
  preset: PresetName;
  family: HeaderFamily;
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string;
  requiredHeader: string;
  eventType: string;
  /**
   * The package that checks: the member's own (which only verifies: svix or standardwebhooks signs),
   * or svix itself, which also signs.
   */
  verifier: Verifier;
}

const whsec = (words: string): string => `whsec_${Buffer.from(words).toString('base64')}`;

export function familyCase({
  preset,
  family,
  sample,
  requiredHeader,
  eventType,
  verifier,
}: FamilyMember): ProviderCase {
  return {
    preset,
    credential: 'secret',
    secret: whsec(`${preset} signing secret, current`),
    wrongSecret: whsec(`${preset} signing secret, wrong`),
    deliver: (secret, atMs) => signFamily(family, secret, samplePayload(preset, `${sample}.json`), atMs),
    accepts: verifier,
    timestamped: true,
    requiredHeader,
    eventType,
    proof: SIGNING_PACKAGES.includes(verifier) ? 'package-signs' : 'package-verifies',
  };
}
