/**
 * Signing on the laptop: the server never hands out a signature, so `listen --sign-secret` signs
 * each forwarded event itself, with the scheme of the event's provider preset (as the server
 * reports it) and the developer's own secret. The secret is passed to the preset exactly as the
 * provider's `secret` (or `token`) in switchboard.yaml is, so `whsec_…` means to Standard Webhooks
 * and to Stripe here what it means there; for HTTP Basic it is `username:password`, the pair the
 * server's own check compares.
 */
import type { ApiProviderDetail, ApiReplayHeaders, Hmac, ProviderWithDefaults } from '../../generated/types.ts';
import { isPresetName, presetFor } from '../verify/preset-registry.ts';
import { usesUrl } from '../verify/preset-options.ts';
import { SENDABLE_HEADER_VALUE, isNeverSent } from '../shared/header-names.ts';
import type { Preset } from '../verify/preset-types.ts';

export type Signing =
  | { kind: 'signature'; preset: Preset }
  | { kind: 'token'; header: string }
  // A credential that travels in the body (Figma's passcode): the server stores it blanked.
  | { kind: 'body'; restore: NonNullable<Preset['bodyCredential']>['restore'] }
  | { kind: 'none'; reason: string };

type HmacOptions = NonNullable<ProviderWithDefaults['hmac']>;

/** The server sends the options with the schema's defaults filled in (and the validator fills any it left out). */
function filledHmac(hmac: Hmac): HmacOptions | undefined {
  const { algorithm, encoding, signed, timestamp_format, secret_encoding } = hmac;
  if (
    algorithm === undefined ||
    encoding === undefined ||
    signed === undefined ||
    timestamp_format === undefined ||
    secret_encoding === undefined
  )
    return undefined;
  return { ...hmac, algorithm, encoding, signed, timestamp_format, secret_encoding };
}

/** The provider's preset as its detail describes it, or why there is none to build. */
function presetOf(detail: ApiProviderDetail): Preset | string {
  const { provider } = detail;
  if (!isPresetName(provider.preset)) return `unknown preset ${String(provider.preset)}`;
  const hmac = detail.hmac === undefined ? undefined : filledHmac(detail.hmac);
  if (detail.hmac !== undefined && hmac === undefined) return 'the server sent incomplete hmac options';
  try {
    return presetFor({
      preset: provider.preset,
      ...(hmac === undefined ? {} : { hmac }),
      ...(detail.public_url === undefined ? {} : { public_url: detail.public_url }),
    });
  } catch (err: unknown) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * The detail with the target as the URL its preset signs, for `listen --sign-for-target`: a preset
 * whose catalog scheme signs the URL it is called at (Twilio, Square, HubSpot, Trello, QStash's
 * subject) then signs for the local app's own URL, which a stock middleware checks against the URL
 * it was called at. The target's own query goes with each delivery and is signed with it, so the
 * URL given here is the target without one. Any other preset is left as it is.
 */
export function signedForTarget(detail: ApiProviderDetail, target: string): ApiProviderDetail {
  const { preset } = detail.provider;
  if (!isPresetName(preset) || !usesUrl(preset) || detail.public_url === undefined) return detail;
  const url = new URL(target);
  url.search = '';
  url.hash = '';
  return { ...detail, public_url: url.toString() };
}

/** How events of this provider are signed, from GET /api/providers/{name}. */
export function signingFor(detail: ApiProviderDetail): Signing {
  const { provider } = detail;
  if (provider.trust_mode === 'queue' || provider.trust_mode === 'open')
    return { kind: 'none', reason: `${provider.trust_mode} provider` };
  const preset = presetOf(detail);
  if (provider.trust_mode === 'token') {
    if (detail.token_header !== undefined) return { kind: 'token', header: detail.token_header };
    // HTTP Basic (basic-auth, postmark, chargebee) has no token header: its preset makes the
    // Authorization header from the secret, given as `username:password`.
    if (typeof preset !== 'string' && preset.sign !== undefined) return { kind: 'signature', preset };
    if (typeof preset !== 'string' && preset.bodyCredential !== undefined)
      return { kind: 'body', restore: preset.bodyCredential.restore };
    return { kind: 'none', reason: 'the server did not say which header carries the token' };
  }
  if (typeof preset === 'string') return { kind: 'none', reason: preset };
  return preset.sign === undefined
    ? { kind: 'none', reason: `preset ${preset.name} cannot sign` }
    : { kind: 'signature', preset };
}

/**
 * The lower-cased headers that carry this provider's signature or token. listen never copies
 * them from its server's answer (the server never puts them there; one that does is not
 * trusted): only listen's own signature, made with the developer's secret, goes out.
 */
export function secretHeadersOf(detail: ApiProviderDetail): string[] {
  const preset = presetOf(detail);
  const names = typeof preset === 'string' ? [] : [...preset.sensitiveHeaders];
  if (detail.token_header !== undefined) names.push(detail.token_header);
  return names.map((name) => name.toLowerCase());
}

/**
 * The signature or token headers for one event, or none with the reason. Only an event that passed
 * its check on arrival, as the same kind of provider it is now, is signed: trust is never laundered.
 */
export function credentialsFor(input: {
  signing: Signing;
  event: ApiReplayHeaders;
  body: Buffer;
  secret: string;
  nowMs: number;
  /** URL-signing presets: the query string the delivery carries (shared/url-query.ts). */
  query?: string | undefined;
}): { headers: Record<string, string>; body?: Buffer } | { headers: Record<string, never>; reason: string } {
  const { signing, event } = input;
  if (event.passed_check !== true) return { headers: {}, reason: 'it did not pass its check on arrival' };
  if (signing.kind === 'none') return { headers: {}, reason: signing.reason };
  if (signing.kind === 'body') {
    if (event.trust_mode !== 'token') return { headers: {}, reason: `stored as a ${event.trust_mode} event` };
    return { headers: {}, body: signing.restore(input.body, input.secret) };
  }
  if (signing.kind === 'token') {
    if (event.trust_mode !== 'token') return { headers: {}, reason: `stored as a ${event.trust_mode} event` };
    return { headers: { [signing.header]: input.secret } };
  }
  // A signed preset signs a signed event; HTTP Basic, a token preset, attaches its header to a token event.
  if (event.trust_mode !== signing.preset.trustMode || signing.preset.sign === undefined)
    return { headers: {}, reason: `stored as a ${event.trust_mode} event` };
  return {
    headers: signing.preset.sign({
      body: input.body,
      secret: input.secret,
      nowMs: input.nowMs,
      headers: event.headers,
      ...(input.query === undefined ? {} : { query: input.query }),
    }),
  };
}

/**
 * The original signature headers the server gave for an asymmetric scheme's event (Ed25519, ECDSA,
 * Standard Webhooks v1a), sent unchanged: nobody but the provider can sign such an event, so its
 * own proof is what the local app checks. Null unless the event passed its check on arrival (the
 * server sends them only then; listen checks again rather than trust the answer).
 */
export function originalCredentials(event: ApiReplayHeaders): Record<string, string> | null {
  if (event.passed_check !== true || event.trust_mode !== 'signed' || event.original_headers === undefined) return null;
  const out: Record<string, string> = {};
  for (const [rawName, value] of Object.entries(event.original_headers)) {
    const name = rawName.toLowerCase();
    if (typeof value === 'string' && !isNeverSent(name) && SENDABLE_HEADER_VALUE.test(value)) out[name] = value;
  }
  return Object.keys(out).length === 0 ? null : out;
}
