import type { EventHeaders } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';

/** What a replay carries to prove itself, for the log (never the value). */
export type CredentialKind = 'signature' | 'token' | 'none';

export interface ReplayCredentials {
  kind: CredentialKind;
  /** Why nothing was attached, when kind is none. */
  reason: string | undefined;
  headers: Record<string, string>;
}

/** Lower-cased names whose stored values are secrets or signatures: replay must never copy them. */
export function secretHeadersOf(config: ProviderConfig | undefined): readonly string[] {
  return config?.family === 'webhook' ? config.preset.sensitiveHeaders : [];
}

const none = (reason: string): ReplayCredentials => ({ kind: 'none', reason, headers: {} });

export interface CredentialInput {
  body: Buffer;
  storedHeaders: EventHeaders;
  nowMs: number;
}

/**
 * Signs the payload afresh with the FIRST configured secret, or attaches the first configured
 * token: during a rotation the operator lists the secret the consumer already knows first.
 * `replay.resign: false` turns both off: a consumer that checks then rejects the replay, which is
 * what an operator who does not want switchboard to hold a sender's authority asked for.
 */
export function replayCredentials(config: ProviderConfig | undefined, input: CredentialInput): ReplayCredentials {
  if (config === undefined) return none('provider no longer configured');
  if (config.family === 'queue') return none('queue provider');
  const { preset } = config;
  if (config.trustMode === 'open') return none('open provider');
  if (!config.resignOnReplay) return none('replay.resign is false');
  const [secret] = config.secrets;
  if (secret === undefined) return none(config.trustMode === 'token' ? 'no token configured' : 'no secret configured');

  if (config.trustMode === 'token') {
    if (preset.tokenHeader === undefined) return none('token preset without a token header');
    return { kind: 'token', reason: undefined, headers: { [preset.tokenHeader]: secret } };
  }
  if (preset.sign === undefined) return none(`preset ${preset.name} cannot sign`);
  const headers = preset.sign({ body: input.body, secret, nowMs: input.nowMs, headers: input.storedHeaders });
  return { kind: 'signature', reason: undefined, headers };
}
