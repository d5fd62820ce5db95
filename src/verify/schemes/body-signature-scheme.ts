/**
 * What the body-signature engines share (engines/mailgun-signature.ts, engines/adyen-hmac.ts):
 * reading the JSON body their signature travels in, and the verdicts they give about it. Neither
 * can be re-signed without rewriting the stored bytes, so replay sends the body as stored, its
 * signature inside.
 */
import type { VerifyOutcome } from '../preset-types.ts';
import { rotationNote } from '../verdicts.ts';

export function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

export const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

export function passed(kind: string, index: number, count: number): Extract<VerifyOutcome, { ok: true }> {
  const rotation = rotationNote('secret', index, count);
  return { ok: true, detail: `hmac-sha256 valid (${kind})${rotation}` };
}
