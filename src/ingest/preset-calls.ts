/**
 * Calling a preset from the request path. Presets are pure and must not throw, but a delivery is
 * hostile input: one that makes a preset throw must cost the event its verdict, name or summary,
 * never the request a 500.
 */
import type {
  DeliveryBody,
  EventIdentity,
  HeaderBag,
  Preset,
  VerifyInput,
  VerifyOutcome,
} from '../verify/preset-types.ts';
import { duplicateJsonKey } from '../verify/schemes/json-value-ranges.ts';
import { cleanEventType, cleanExternalId } from '../sanitize/clean-identifier.ts';

/** Presets must not throw, but one that does must cost a 401 rather than a 500 with a stack. */
export function safeVerify(preset: Preset, input: Parameters<Preset['verify']>[0]): VerifyOutcome {
  try {
    return preset.verify(input);
  } catch {
    return { ok: false, reason: 'malformed_header', detail: 'verification failed on malformed input' };
  }
}

export function safeIdentify(preset: Preset, body: Buffer, headers: HeaderBag, parsed: DeliveryBody): EventIdentity {
  let identity: EventIdentity;
  try {
    identity = preset.identify(body, headers, parsed);
  } catch {
    identity = { eventType: 'unknown', externalId: null };
  }
  return {
    eventType: cleanEventType(identity.eventType) ?? 'unknown',
    externalId: identity.externalId === null ? null : cleanExternalId(identity.externalId),
  };
}

/** A summary is a convenience: a preset that throws on odd input costs the event its summary, nothing more. */
export function safeSummarize(preset: Preset, parsed: DeliveryBody, headers: HeaderBag): string | null {
  try {
    return preset.summarize(parsed, headers);
  } catch {
    return null;
  }
}

/**
 * The check, after the body is known to mean one thing where the scheme reads its signature or
 * signed fields from it (37.7): an object repeating a key is read last-wins here and first-wins
 * by some consumers, who would see the unsigned copy.
 */
export function verifyBody(preset: Preset, input: VerifyInput): VerifyOutcome {
  const duplicate = preset.readsSignatureFromBody === true ? duplicateJsonKey(input.body) : null;
  if (duplicate === null) return safeVerify(preset, input);
  const detail = `duplicate JSON key ${JSON.stringify(duplicate.slice(0, 64))} in a body that carries its signature; refused`;
  return { ok: false, reason: 'duplicate_json_key', detail };
}
