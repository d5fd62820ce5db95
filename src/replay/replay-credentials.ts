import type { EventHeaders } from '../../generated/types.ts';
import type { ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import { buildPreset } from '../ingest/verify/preset-registry.ts';
import { DEFAULT_TOKEN_HEADER } from '../ingest/verify/token-preset.ts';
import type { Preset } from '../ingest/verify/verifier-types.ts';
import type { StoredEvent } from '../store/index.ts';

/** What a replay carries to prove itself, for the log (never the value). */
export type CredentialKind = 'signature' | 'token' | 'none';

export interface ReplayCredentials {
  kind: CredentialKind;
  /** Why nothing was attached, when kind is none. */
  reason: string | undefined;
  headers: Record<string, string>;
}

/** One configured provider, prepared once: its preset and the headers replay must never copy. */
export interface ReplayProvider {
  config: ProviderConfig;
  preset: Preset | undefined;
  /** Lower-cased names whose stored values are secrets or signatures. */
  secretHeaders: readonly string[];
  /** Token providers: the header the token travels in. */
  tokenHeader: string | undefined;
}

function tokenHeaderOf(config: WebhookProviderConfig): string | undefined {
  if (config.preset === 'gitlab') return 'x-gitlab-token';
  if (config.preset === 'token') return (config.tokenHeader ?? DEFAULT_TOKEN_HEADER).toLowerCase();
  return undefined;
}

/**
 * Built the way ingest builds it, so replay signs exactly what ingest would verify. Throws (at
 * startup, when the service is created) for options the preset refuses.
 */
export function prepareReplayProvider(config: ProviderConfig): ReplayProvider {
  if (config.family === 'queue') return { config, preset: undefined, secretHeaders: [], tokenHeader: undefined };
  const preset = buildPreset({
    preset: config.preset,
    token_header: config.tokenHeader,
    hmac: config.hmac,
    event_type_from: config.eventTypeFrom,
    external_id_from: config.externalIdFrom,
  });
  const tokenHeader = tokenHeaderOf(config);
  const secretHeaders = [...preset.sensitiveHeaders, ...(tokenHeader === undefined ? [] : [tokenHeader])].map((n) =>
    n.toLowerCase(),
  );
  return { config, preset, secretHeaders, tokenHeader };
}

const none = (reason: string): ReplayCredentials => ({ kind: 'none', reason, headers: {} });

export interface CredentialInput {
  body: Buffer;
  storedHeaders: EventHeaders;
  nowMs: number;
  /** The stored event's trust mode and check outcome: credentials go only with a passed check. */
  arrival: Pick<StoredEvent, 'trustMode' | 'passedCheck'>;
}

/**
 * Why an event may not be replayed with credentials, or undefined when it may (it passed its
 * check, or it has none to pass). The message is the caller's: it says why and what to do.
 */
export function failedArrivalMessage(event: Pick<StoredEvent, 'trustMode' | 'passedCheck'>): string | undefined {
  if (event.passedCheck !== false) return undefined;
  const remedy = 'Pass `unsigned: true` to send the stored bytes without any signature or token.';
  return event.trustMode === 'signed'
    ? `this event failed signature verification on arrival; replaying it signed would make it look genuine. ${remedy}`
    : `this event did not pass its token check on arrival; replaying it with the token would make it look genuine. ${remedy}`;
}

/**
 * Signs the payload afresh with the FIRST configured secret, or attaches the first configured
 * token: during a rotation the operator lists the secret the consumer already knows first.
 * `replay.resign: false` turns both off: a consumer that checks then rejects the replay, which is
 * what an operator who does not want switchboard to hold a sender's authority asked for.
 *
 * Trust is never laundered: credentials go only with an event that passed this same kind of check
 * when it arrived. An event stored while its provider checked nothing (open) or checked another
 * way gets none, even if the provider is configured to sign now.
 */
export function replayCredentials(provider: ReplayProvider | undefined, input: CredentialInput): ReplayCredentials {
  if (provider === undefined) return none('provider no longer configured');
  const { config, preset } = provider;
  if (config.family === 'queue' || preset === undefined) return none('queue provider');
  if (config.trustMode === 'open') return none('open provider');
  if (!config.resignOnReplay) return none('replay.resign is false');
  if (input.arrival.trustMode !== config.trustMode) {
    return none(`stored as a ${input.arrival.trustMode} event; the provider is ${config.trustMode} now`);
  }
  if (input.arrival.passedCheck !== true) return none('the event did not pass its check on arrival');
  const [secret] = config.secrets;
  if (secret === undefined) return none(config.trustMode === 'token' ? 'no token configured' : 'no secret configured');

  if (config.trustMode === 'token') {
    if (provider.tokenHeader === undefined) return none('token preset without a token header');
    return { kind: 'token', reason: undefined, headers: { [provider.tokenHeader]: secret } };
  }
  if (preset.sign === undefined) return none(`preset ${preset.name} cannot sign`);
  const headers = preset.sign({ body: input.body, secret, nowMs: input.nowMs, headers: input.storedHeaders });
  return { kind: 'signature', reason: undefined, headers };
}
