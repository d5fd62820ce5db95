/**
 * Builds a preset the one way there is: the provider's catalog entry, run by its scheme's engine
 * (engines/), with the provider's own hooks (hooks/) on top, and config's identity overrides last.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { catalogIdentify, catalogSummarize } from './catalog-identity.ts';
import type { PresetOptions, Verification } from './engines/engine.ts';
import { engineFor } from './engines/engine-registry.ts';
import { PROVIDER_HOOKS } from './hooks/provider-hooks.ts';
import { genericIdentity, LazyBody, type FieldSource, parseFieldSource, withIdentityOverrides } from './identify.ts';
import type { CredentialKind, Identify, Preset } from './preset-types.ts';
import { presetOptionProblem } from './preset-options.ts';

export function isPresetName(value: unknown): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value);
}

/** A preset's catalog entry: its scheme, headers, samples, handshake and proof. */
export function catalogEntry(name: PresetName): ProviderCatalogEntry {
  return PROVIDER_CATALOG[name];
}

/**
 * The credential a preset checks with: what config must give and what replay can attach. Standard
 * Webhooks takes either: configured with whpk_ public keys only, it is asymmetric.
 */
export function credentialOf(
  entry: ProviderCatalogEntry,
  options?: Pick<PresetOptions, 'secret' | 'public_key'>,
): CredentialKind {
  return engineFor(entry.scheme).credential(options);
}

const genericIdentify: Identify = (body, headers, parsed) => genericIdentity(parsed ?? new LazyBody(body), headers);

type Common = Omit<Preset, 'credential' | keyof Verification> &
  Pick<Verification, 'requiredHeaders' | 'sensitiveHeaders' | 'verify'>;

/** Members an engine built that a preset of this credential kind cannot have: an engine's bug. */
function misfit(where: string, credential: CredentialKind, members: Record<string, unknown>): Error {
  const names = Object.keys(members).filter((name) => members[name] !== undefined);
  return invalidArgument(`${where}: a ${credential} preset cannot have ${names.join(', ')}`);
}

/** The members that are set: a Preset's optional members are absent, never present and undefined. */
function setMembers<T extends Record<string, unknown>>(members: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(members).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

/** The preset of its credential kind, with only the members that kind has (preset-types.ts). */
function byCredential(where: string, credential: CredentialKind, common: Common, v: Verification): Preset {
  const { sign, signBody, readsSignatureFromBody, originalHeaders, checkCredential, checkPublicKey } = v;
  const { tokenHeader, bodyCredential } = v;
  if (credential === 'secret') {
    if (originalHeaders ?? tokenHeader ?? bodyCredential) {
      throw misfit(where, credential, { originalHeaders, tokenHeader, bodyCredential });
    }
    return {
      ...common,
      credential,
      ...setMembers({ checkCredential, sign, signBody, readsSignatureFromBody, checkPublicKey }),
    };
  }
  if (credential === 'public_key') {
    if (
      originalHeaders === undefined ||
      checkPublicKey === undefined ||
      (sign ?? signBody ?? tokenHeader ?? bodyCredential)
    ) {
      throw misfit(where, credential, { sign, signBody, tokenHeader, bodyCredential });
    }
    return { ...common, credential, originalHeaders, checkPublicKey, ...setMembers({ checkCredential }) };
  }
  if (credential === 'token') {
    if (originalHeaders ?? checkPublicKey ?? readsSignatureFromBody) {
      throw misfit(where, credential, { originalHeaders, checkPublicKey, readsSignatureFromBody });
    }
    return { ...common, credential, ...setMembers({ checkCredential, sign, signBody, tokenHeader, bodyCredential }) };
  }
  if (sign ?? signBody ?? originalHeaders ?? checkPublicKey ?? tokenHeader ?? bodyCredential ?? checkCredential) {
    throw misfit(where, credential, { sign, signBody, originalHeaders, checkPublicKey, tokenHeader, bodyCredential });
  }
  return { ...common, credential };
}

function basePreset(options: PresetOptions): Preset {
  const entry = catalogEntry(options.preset);
  const engine = engineFor(entry.scheme);
  const credential = engine.credential(options);
  const where = `preset ${entry.name}`;
  const verification = engine.build({ scheme: entry.scheme, entry, options, where, credential });
  const hooks = PROVIDER_HOOKS[options.preset] ?? {};
  const common: Common = {
    name: options.preset,
    trustMode: credential === 'token' ? 'token' : credential === 'none' ? 'open' : 'signed',
    ...(entry.handshake === undefined ? {} : { handshake: entry.handshake }),
    requiredHeaders: verification.requiredHeaders,
    sensitiveHeaders: [...verification.sensitiveHeaders, ...(hooks.alsoSensitive ?? [])],
    verify: verification.verify,
    identify: hooks.identify ?? catalogIdentify(entry) ?? engine.identify ?? genericIdentify,
    summarize:
      hooks.summarize ??
      (entry.summary === undefined && engine.summarize !== undefined ? engine.summarize : catalogSummarize(entry)),
  };
  return byCredential(where, credential, common, verification);
}

/**
 * The preset a provider's config describes; config resolution calls this once per provider, and
 * ingest, replay and trigger all use what it built. Options that the chosen preset would silently
 * ignore are rejected instead, because a token_header on a github provider, say, means the operator
 * believes something is checked that is not. event_type_from / external_id_from apply to every
 * preset; when they find nothing in a delivery, the preset's own answer is used.
 */
export function presetFor(options: PresetOptions): Preset {
  if (!isPresetName(options.preset)) {
    throw invalidArgument(`unknown preset "${String(options.preset)}"; expected one of ${PRESET_NAMES.join(', ')}`);
  }
  // The same rules config resolution applies (verify/preset-options.ts), for callers that build a
  // preset without a config file (listen signs with one the server describes).
  const problem = presetOptionProblem(options.preset, options);
  if (problem !== null) throw invalidArgument(`${problem.key}: ${problem.message}`);
  const eventTypeFrom: FieldSource | undefined =
    options.event_type_from === undefined ? undefined : parseFieldSource(options.event_type_from, 'event_type_from');
  const externalIdFrom: FieldSource | undefined =
    options.external_id_from === undefined ? undefined : parseFieldSource(options.external_id_from, 'external_id_from');
  const base = basePreset(options);
  if (eventTypeFrom === undefined && externalIdFrom === undefined) return base;
  return { ...base, identify: withIdentityOverrides(base.identify, { eventTypeFrom, externalIdFrom }) };
}
