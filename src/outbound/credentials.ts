import type { EventHeaders } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import type { Preset } from '../verify/preset-types.ts';
import { REDACTED } from '../sanitize/sanitize-headers.ts';
import { SENDABLE_HEADER_VALUE } from '../shared/header-names.ts';
import type { StoredEvent } from '../store/events/event-store.ts';

/**
 * What a delivery carries to prove itself, for the log and the replay result (never the value):
 * a fresh signature, the configured token, the stored event's original signature headers (an
 * asymmetric scheme, which switchboard cannot sign: it holds only the public key), or nothing.
 */
export type CredentialKind = 'signature' | 'token' | 'original' | 'none';

export interface DeliveryCredentials {
  kind: CredentialKind;
  /** Why nothing was attached, when kind is none. */
  reason: string | undefined;
  headers: Record<string, string>;
  /**
   * The bytes to send instead of the stored ones, for a preset whose credential travels in the
   * body (Figma's passcode, blanked when stored): the stored body with the configured one put back.
   */
  body?: Buffer;
}

/** Lower-cased names whose stored values are secrets or signatures: a delivery must never copy them. */
export function secretHeadersOf(config: ProviderConfig | undefined): readonly string[] {
  return config?.family === 'webhook' ? config.preset.sensitiveHeaders : [];
}

const none = (reason: string): DeliveryCredentials => ({ kind: 'none', reason, headers: {} });

export interface CredentialInput {
  body: Buffer;
  storedHeaders: EventHeaders;
  nowMs: number;
  /** The stored event's trust mode and check outcome: credentials go only with a passed check. */
  arrival: Pick<StoredEvent, 'trustMode' | 'passedCheck'>;
  /** URL-signing presets: the query string the delivery carries (signedQueryOf), which is signed. */
  query?: string | undefined;
}

/**
 * The query string a delivery of this stored event arrived with, for a preset that signs the URL
 * it was called at (config resolution gives those, and only those, a public URL); undefined for
 * other presets or when the delivery had none. Secret-looking values were redacted on arrival, so
 * what a delivery carries and signs is the query as stored (shared/url-query.ts).
 */
export function originalQueryOf(
  config: ProviderConfig | undefined,
  stored: Pick<StoredEvent, 'request'>,
): string | undefined {
  if (config?.family !== 'webhook' || config.publicUrl === undefined) return undefined;
  const query = stored.request?.query ?? '';
  return query === '' ? undefined : query;
}

/**
 * Signs the payload afresh with the FIRST configured secret, or attaches the first configured
 * token: during a rotation the operator lists the secret the consumer already knows first.
 * `replay.resign: false` turns both off: a consumer that checks then rejects the delivery, which is
 * what an operator who does not want switchboard to hold a sender's authority asked for.
 *
 * Trust is never laundered: credentials go only with an event that passed this same kind of check
 * when it arrived. An event stored while its provider checked nothing (open) or checked another
 * way gets none, even if the provider is configured to sign now.
 */
export function deliveryCredentials(config: ProviderConfig | undefined, input: CredentialInput): DeliveryCredentials {
  if (config === undefined) return none('provider no longer configured');
  if (config.family === 'queue') return none('queue provider');
  const { preset } = config;
  if (config.trustMode === 'open') return none('open provider');
  if (!config.resignOnReplay) return none('replay.resign is false');
  if (input.arrival.trustMode !== config.trustMode) {
    return none(`stored as a ${input.arrival.trustMode} event; the provider is ${config.trustMode} now`);
  }
  if (input.arrival.passedCheck !== true) return none('the event did not pass its check on arrival');
  if (preset.credential === 'public_key') {
    // switchboard holds only the public key: the proof it can send is the sender's own.
    const headers = originalSignatureHeaders(preset, input.storedHeaders);
    return Object.keys(headers).length === 0
      ? none('the original signature headers were not stored')
      : { kind: 'original', reason: undefined, headers };
  }
  const [secret] = config.secrets;
  if (secret === undefined) return none(config.trustMode === 'token' ? 'no token configured' : 'no secret configured');

  if (config.trustMode === 'token') {
    if (preset.bodyCredential !== undefined) {
      return { kind: 'token', reason: undefined, headers: {}, body: preset.bodyCredential.restore(input.body, secret) };
    }
    // HTTP Basic makes its header from the credential (username:password) rather than sending it as is.
    if (preset.sign !== undefined) {
      return {
        kind: 'token',
        reason: undefined,
        headers: preset.sign({ body: input.body, secret, nowMs: input.nowMs }),
      };
    }
    if (preset.tokenHeader === undefined) return none('token preset without a token header');
    return { kind: 'token', reason: undefined, headers: { [preset.tokenHeader]: secret } };
  }
  if (preset.sign === undefined) return none(`preset ${preset.name} cannot sign`);
  const headers = preset.sign({
    body: input.body,
    secret,
    nowMs: input.nowMs,
    headers: input.storedHeaders,
    ...(input.query === undefined ? {} : { query: input.query }),
  });
  return { kind: 'signature', reason: undefined, headers };
}

/**
 * An asymmetric preset's original signature headers (and the timestamp they sign), as stored. They
 * are public proofs, stored as received (ingest keeps Preset.originalHeaders unredacted); one that
 * is missing, redacted, repeated or unsendable is left out, and the consumer's check then fails
 * rather than passing on something switchboard made up. The caller decides whether the event
 * earned them (deliveryCredentials: it passed its check on arrival).
 */
function originalSignatureHeaders(
  preset: Pick<Preset, 'originalHeaders'>,
  stored: EventHeaders,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of preset.originalHeaders ?? []) {
    const value = stored[name];
    if (typeof value === 'string' && value !== REDACTED && SENDABLE_HEADER_VALUE.test(value)) out[name] = value;
  }
  return out;
}
