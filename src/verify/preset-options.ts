/**
 * Which config keys each preset takes, in one place (config resolution asks here; nothing else
 * restates a rule). A key the chosen preset would silently ignore is an error, because a
 * `public_key` on an HMAC provider, say, means the operator believes something is checked that is
 * not. What a preset needs follows from its catalog scheme: secret (HMAC, JWT), public_key
 * (Ed25519, ECDSA; both for Standard Webhooks, whose v1a is Ed25519), token, username and
 * password (HTTP Basic), public_url (schemes that sign the URL), verify_token (Meta's handshake),
 * and the scheme options its engine reads from the entry: token_header (a token entry whose header
 * is configurable), hmac (configured-hmac). No rule here names a preset.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { CredentialKey, ProviderKeys, SchemeOptionKey } from './engines/engine.ts';
import { engineFor } from './engines/engine-registry.ts';

export type PresetOptionKeys = ProviderKeys<
  'secret' | 'token' | 'public_key' | 'public_url' | 'verify_token' | 'username' | 'password' | 'token_header' | 'hmac'
>;

export interface OptionProblem {
  /** The config key at fault, under the provider. */
  key: keyof PresetOptionKeys | 'preset';
  message: string;
}

/** Whether the preset's scheme signs the URL the provider calls (so it needs public_url). */
export function signsUrl(name: PresetName): boolean {
  const { scheme } = PROVIDER_CATALOG[name];
  return engineFor(scheme).signsUrl(scheme);
}

/** Whether the preset can use the URL it is called at, when one is known (QStash's subject). */
export function usesUrl(name: PresetName): boolean {
  const { scheme } = PROVIDER_CATALOG[name];
  return engineFor(scheme).usesUrl(scheme);
}

const CREDENTIALS: readonly CredentialKey[] = ['secret', 'public_key', 'token', 'username', 'password'];
const SCHEME_OPTIONS: readonly SchemeOptionKey[] = ['token_header', 'hmac'];

/** The scheme options (token_header, hmac) the preset's scheme takes, as its engine reads its entry. */
function schemeOptionsOf(name: PresetName): readonly SchemeOptionKey[] {
  const { scheme } = PROVIDER_CATALOG[name];
  return engineFor(scheme).schemeOptions(scheme);
}

/** The presets that take a scheme option, which an error about it names. */
const takersOf = (key: SchemeOptionKey): string =>
  PRESET_NAMES.filter((n) => schemeOptionsOf(n).includes(key)).join(', ');

/** The first option the preset does not take or lacks, or null when the options fit it. */
export function presetOptionProblem(name: PresetName, options: PresetOptionKeys): OptionProblem | null {
  const entry = PROVIDER_CATALOG[name];
  const takes = engineFor(entry.scheme).credentialKeys;
  for (const key of CREDENTIALS) {
    if (options[key] !== undefined && !takes.includes(key)) {
      const wanted = takes.length === 0 ? 'nothing' : takes.join(' and ');
      return { key, message: `preset ${name} takes ${wanted}, not ${key}` };
    }
  }
  if (takes.includes('username') && (options.username === undefined) !== (options.password === undefined)) {
    return { key: options.username === undefined ? 'username' : 'password', message: 'basic auth needs both' };
  }
  const schemeOptions = schemeOptionsOf(name);
  for (const key of SCHEME_OPTIONS) {
    if (options[key] !== undefined && !schemeOptions.includes(key)) {
      return { key, message: `only the ${takersOf(key)} preset takes ${key}, not ${name}` };
    }
  }
  const required = engineFor(entry.scheme).requiredOption;
  if (required !== undefined && options[required.key] === undefined) {
    return { key: required.key, message: `the ${name} preset needs ${required.what}` };
  }
  if (options.verify_token !== undefined && entry.handshake !== 'meta-subscribe') {
    return { key: 'verify_token', message: `preset ${name} has no GET handshake that carries a verify token` };
  }
  if (options.public_url !== undefined && !usesUrl(name)) {
    return { key: 'public_url', message: `preset ${name} does not sign the URL it calls` };
  }
  return null;
}

/**
 * What a provider's check compares against, in config order (the first secret is the one replay,
 * forwarding and trigger sign with): secrets, tokens or `username:password` pairs on one side,
 * public keys on the other. A `public_key` value never lands among the secrets, whatever it looks
 * like: an HMAC keyed with a public key proves nothing.
 */
export function providerCredentials(options: PresetOptionKeys): { secrets: string[]; publicKeys: string[] } {
  const list = (value: string | string[] | undefined): string[] =>
    (value === undefined ? [] : Array.isArray(value) ? value : [value]).filter((v) => v !== '');
  const publicKeys = list(options.public_key);
  if (options.username !== undefined) {
    return { secrets: list(options.password).map((p) => `${options.username ?? ''}:${p}`), publicKeys };
  }
  return { secrets: [...list(options.secret), ...list(options.token)], publicKeys };
}
