/**
 * Which catalog providers a request looks like it came from, by the signature headers it carries:
 * a delivery that reaches an open provider, or a route with no provider, with `Stripe-Signature`
 * on it is a Stripe delivery whose check nobody asked for. The headers are each catalog entry's
 * own (its scheme's), so a provider added to the catalog is recognised with no change here. Only
 * header names are read, never their values: a signature is a credential (stored redacted) and
 * the name alone says who signed.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry, SenderHint } from '../../generated/types.ts';
import { ALWAYS_SENSITIVE_HEADERS } from '../shared/header-names.ts';
import { credentialOf } from './preset-registry.ts';
import { engineFor } from './engines/engine-registry.ts';

/** The headers an entry's scheme carries its signature in; none for credential and body schemes. */
function signatureHeadersOf(entry: ProviderCatalogEntry): readonly string[] {
  return engineFor(entry.scheme).signatureHeaders(entry.scheme);
}

/**
 * Lower-cased signature header → the presets that sign with it, in catalog order. A header any
 * request may carry a credential in (Authorization, which Vonage signs in) names no one sender.
 */
const SIGNERS: ReadonlyMap<string, readonly PresetName[]> = (() => {
  const signers = new Map<string, PresetName[]>();
  for (const name of PRESET_NAMES) {
    for (const header of signatureHeadersOf(PROVIDER_CATALOG[name])) {
      const lower = header.toLowerCase();
      if (ALWAYS_SENSITIVE_HEADERS.includes(lower)) continue;
      const list = signers.get(lower) ?? [];
      if (!list.includes(name)) list.push(name);
      signers.set(lower, list);
    }
  }
  return signers;
})();

/** The presets whose signature headers are among these (lower-cased) names, in catalog order. */
function signersOf(headerNames: Iterable<string>): PresetName[] {
  const found = new Set<PresetName>();
  for (const header of headerNames) for (const name of SIGNERS.get(header.toLowerCase()) ?? []) found.add(name);
  return PRESET_NAMES.filter((name) => found.has(name));
}

/** `STRIPE_WEBHOOK_SECRET`, `DISCORD_PUBLIC_KEY`: the variable a snippet reads the credential from. */
function credentialLine(name: PresetName): { word: string; line: string } {
  const stem = name.toUpperCase().replaceAll('-', '_');
  return credentialOf(PROVIDER_CATALOG[name]) === 'public_key'
    ? { word: 'public key', line: `public_key: '\${${stem}_PUBLIC_KEY}'` }
    : { word: 'secret', line: `secret: '\${${stem}_WEBHOOK_SECRET}'` };
}

/**
 * What to say about a request whose headers name these signers, for the provider (or route name)
 * it reached: one sentence, and the config that would check it. Several signers (svix-signature
 * is the whole Standard Webhooks family's) are all named, the config giving the first and the
 * others as commented alternatives. Undefined when no signer is named.
 */
export function senderHint(providerName: string, headerNames: Iterable<string>): SenderHint | undefined {
  const presets = signersOf(headerNames);
  const [first] = presets;
  if (first === undefined) return undefined;
  const titles = presets.map((name) => PROVIDER_CATALOG[name].title);
  const words = [...new Set(presets.map((name) => credentialLine(name).word))].join(' or ');
  const message =
    presets.length === 1
      ? `looks like a ${titles.join('')} delivery: set preset: ${first} and its ${words}`
      : `looks like a delivery from ${titles.join(', ')}: set the preset of the one that sent it ` +
        `(${presets.map((name) => `preset: ${name}`).join(', ')}) and its ${words}`;
  const config = presets
    .map((name, i) => `${i === 0 ? '' : '# or: '}${providerName}: { preset: ${name}, ${credentialLine(name).line} }`)
    .join('\n');
  return { presets: [first, ...presets.slice(1)], message, config };
}
