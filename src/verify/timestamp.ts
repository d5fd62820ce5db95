import { TOLERANCE_SECONDS } from '../../generated/constants.ts';
import type { VerifyInput, VerifyOutcome } from './preset-types.ts';
import { outsideTolerance } from './verdicts.ts';

/**
 * A nonsensical tolerance (negative, NaN) must not silently disable the check: the schema's
 * default (the Stripe, Slack and Standard Webhooks libraries' five minutes) is used instead.
 */
export function effectiveTolerance(toleranceSeconds: number): number {
  return Number.isFinite(toleranceSeconds) && toleranceSeconds >= 0 ? toleranceSeconds : TOLERANCE_SECONDS.default;
}

/**
 * Unix seconds as senders write them: plain digits only. parseInt would accept "12abc" or "1e3",
 * and a timestamp that parses loosely is a timestamp an attacker can shape.
 */
export function parseUnixSeconds(value: string): number | null {
  const trimmed = value.trim();
  if (!/^\d{1,12}$/.test(trimmed)) return null;
  return Number(trimmed);
}

/**
 * Null when the timestamp is within tolerance, else a stale_timestamp outcome. Both directions
 * count: a timestamp far in the future is as suspect as an old one (a pre-signed request held for
 * later, or a badly wrong sender clock).
 */
export function freshnessFailure(
  timestampMs: number,
  nowMs: number,
  toleranceSeconds: number,
  source: string,
): VerifyOutcome | null {
  const tolerance = effectiveTolerance(toleranceSeconds);
  const skewMs = nowMs - timestampMs;
  if (Math.abs(skewMs) <= tolerance * 1000) return null;
  const skewSeconds = Math.round(Math.abs(skewMs) / 1000);
  const direction = skewMs > 0 ? `${skewSeconds} s old` : `${skewSeconds} s in the future`;
  return outsideTolerance('timestamp', tolerance, `${source} ${direction}`);
}

/** Whole seconds, as the providers' libraries compare them, expressed in milliseconds. */
export function floorToSecondMs(nowMs: number): number {
  return Math.floor(nowMs / 1000) * 1000;
}

/**
 * A passed signature check, unless the unix-seconds timestamp it covered is outside tolerance.
 * Checked after the signature so that "stale" is only reported for what the sender really signed.
 */
export function freshSignature(
  outcome: VerifyOutcome,
  seconds: number,
  input: VerifyInput,
  source: string,
): VerifyOutcome {
  if (!outcome.ok) return outcome;
  return freshnessFailure(seconds * 1000, floorToSecondMs(input.nowMs), input.toleranceSeconds, source) ?? outcome;
}
