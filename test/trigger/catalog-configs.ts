/**
 * A working provider config for every preset of the catalog, taken from the catalog itself
 * (PRESET_NAMES), so a test that configures them all covers a preset the day it is added: a
 * preset's catalog case supplies its credential and config where there is one; otherwise its
 * catalog scheme says what it needs.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { Provider } from '../../generated/types.ts';
import { signsUrl } from '../../src/verify/preset-options.ts';
import { catalogEntry, credentialOf } from '../../src/verify/preset-registry.ts';
import { ALL_CASES } from '../verify/providers/all-cases.ts';
import { BASIC_USERNAME, PUBLIC_URL, type ProviderCase } from '../verify/providers/provider-case.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

const caseOf = (preset: PresetName): ProviderCase | undefined => ALL_CASES.find((c) => c.preset === preset);

const credentialConfig = (c: ProviderCase): Partial<Provider> =>
  c.credential === 'password' ? { username: BASIC_USERNAME, password: c.secret } : { [c.credential]: c.secret };

/**
 * What a preset needs that its catalog scheme does not say how to make up: generic-hmac's own
 * scheme. Every other preset is configured from its case or from its catalog scheme alone, so a
 * new preset needs no line here.
 */
const SPECIAL: Partial<Record<PresetName, Partial<Provider>>> = {
  'generic-hmac': { secret: 'trigger-generic-secret', hmac: { header: 'X-Signature', encoding: 'hex' } },
};

/** A working config for a preset: its catalog case's, else one made from its catalog scheme. */
export function configFor(preset: PresetName): Provider {
  const c = caseOf(preset);
  if (c !== undefined) return { preset, ...credentialConfig(c), ...c.config };
  const special = SPECIAL[preset];
  if (special !== undefined) return { preset, ...special };
  const url = signsUrl(preset) ? { public_url: `${PUBLIC_URL}${preset}` } : {};
  if (PROVIDER_CATALOG[preset].scheme.kind === 'basic') return { preset, username: 'u', password: 'p', ...url };
  switch (credentialOf(catalogEntry(preset))) {
    case 'secret':
      return { preset, secret: `trigger-${preset}-secret`, ...url };
    case 'token':
      return { preset, token: `trigger-${preset}-token`, ...url };
    case 'public_key':
    case 'none':
      return { preset, ...url };
  }
}

/** Every catalog preset as a provider of the same name. */
export const everyCatalogProvider = (): Record<string, Provider> =>
  Object.fromEntries(PRESET_NAMES.map((p) => [p, configFor(p)]));

/** The trust mode a preset's provider resolves to (signed, token or open), as the server resolves it. */
export function resolvedTrustMode(preset: PresetName): string {
  return webhookProvider(providersFrom({ [preset]: configFor(preset) }), preset).trustMode;
}

/** A public-key preset: switchboard holds no private key, so it cannot sign for it. */
export const isAsymmetric = (preset: PresetName): boolean => credentialOf(catalogEntry(preset)) === 'public_key';
