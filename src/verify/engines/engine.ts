/**
 * The contract of a scheme engine: everything about one scheme kind of the catalog
 * (schemas/provider-catalog-entry.schema.json#/$defs/scheme) in one module — the config keys it
 * takes, what it checks with, whether it signs the URL the provider calls, how it verifies and
 * signs, how the docs table describes it, and which headers carry its signature. A preset is its
 * catalog entry, run by its scheme's engine, with the provider's own hooks (verify/hooks/) on top;
 * nothing else switches over scheme kinds (engine-registry.ts is the one lookup).
 */
import type { PresetName } from '../../../generated/constants.ts';
import type { ProviderCatalogEntry, ProviderWithDefaults } from '../../../generated/types.ts';
import type { CredentialKind, Identify, Preset } from '../preset-types.ts';

export type Scheme = ProviderCatalogEntry['scheme'];
export type SchemeKind = Scheme['kind'];
/** The scheme shape a kind is written in (the credential kinds share one shape). */
export type SchemeOf<K extends SchemeKind> = Scheme extends infer S
  ? S extends { kind: infer Kinds }
    ? K extends Kinds
      ? S
      : never
    : never
  : never;

/** Keys of a provider's config, each optional in the schema, as config hands them on: absent or undefined. */
export type ProviderKeys<K extends keyof ProviderWithDefaults> = { [P in K]?: ProviderWithDefaults[P] | undefined };

/** The config keys a credential can be given under. */
export type CredentialKey = 'secret' | 'public_key' | 'token' | 'username' | 'password';

/** The config keys that shape a scheme rather than hold a credential: a configured header, a whole HMAC. */
export type SchemeOptionKey = 'token_header' | 'hmac';

/**
 * The verification part of a provider's config, as the config file writes it (snake_case) and
 * validation leaves it (defaults filled in); `preset` is the one resolved from preset or trust_mode,
 * and `public_url` the URL the provider calls (its own, or server.public_url plus the route).
 */
export type PresetOptions = ProviderKeys<
  'token_header' | 'hmac' | 'event_type_from' | 'external_id_from' | 'public_url' | 'public_key' | 'secret'
> & {
  preset: PresetName;
};

/** What an engine builds for one provider: its check, and what replay and trigger need of it. */
export type Verification = Pick<Preset, 'requiredHeaders' | 'sensitiveHeaders' | 'verify'> &
  Partial<
    Pick<
      Preset,
      | 'sign'
      | 'signBody'
      | 'bodyCredential'
      | 'originalHeaders'
      | 'checkCredential'
      | 'checkPublicKey'
      | 'tokenHeader'
      | 'readsSignatureFromBody'
    >
  >;

interface EngineInput<S extends Scheme> {
  readonly scheme: S;
  readonly entry: ProviderCatalogEntry;
  readonly options: PresetOptions;
  /** How errors name the preset (`preset twilio`). */
  readonly where: string;
  /** What the preset checks with, as credential() decided for these options. */
  readonly credential: CredentialKind;
}

/** The provider table's cells for a scheme (docs/providers.md, written by codegen/catalog.ts). */
interface EngineDocs<S extends Scheme> {
  readonly scheme: (scheme: S) => string;
  readonly headers: (scheme: S) => string;
  /** Whether a timestamp is signed (and so checked against tolerance_seconds). */
  readonly timestamped: (scheme: S) => boolean;
  /** The JSON pointer of a timestamp the body carries, when it is there rather than in a header. */
  readonly bodyTimestamp?: (scheme: S) => string | undefined;
}

export interface SchemeEngine<K extends SchemeKind> {
  readonly kind: K;
  /** The config keys it takes its credential from; the first must be present unless another is. */
  readonly credentialKeys: readonly CredentialKey[];
  /** What it checks with, given which credential keys the config set. */
  readonly credential: (options: Pick<PresetOptions, 'secret' | 'public_key'> | undefined) => CredentialKind;
  /** Whether it signs the URL the provider calls (so config must give public_url). */
  readonly signsUrl: (scheme: SchemeOf<K>) => boolean;
  /** Whether it can use that URL when one is known (QStash's subject), signing it or not. */
  readonly usesUrl: (scheme: SchemeOf<K>) => boolean;
  /** The headers its signature travels in: how a stray delivery is recognised (sender-hint.ts). */
  readonly signatureHeaders: (scheme: SchemeOf<K>) => readonly string[];
  /** The scheme options (token_header, hmac) config may give for this entry's scheme; config refuses the others. */
  readonly schemeOptions: (scheme: SchemeOf<K>) => readonly SchemeOptionKey[];
  /** A scheme option config must give, and what it must hold (configured-hmac's `hmac`). */
  readonly requiredOption?: { readonly key: SchemeOptionKey; readonly what: string };
  /** For schemes checked with a public key: what trigger says it cannot sign (`an Ed25519`). */
  readonly privateKeyAlgorithm?: string;
  readonly build: (input: EngineInput<SchemeOf<K>>) => Verification;
  /** How its deliveries are named and summarised when the entry says nothing (Standard Webhooks' envelope). */
  readonly identify?: Identify;
  readonly summarize?: Preset['summarize'];
  readonly docs: EngineDocs<SchemeOf<K>>;
}

/** What a credential key set means for replay: a secret re-signs, a token is attached, none is open. */
function credentialFromKeys(keys: readonly CredentialKey[]): CredentialKind {
  const first = keys[0];
  if (first === undefined) return 'none';
  if (first === 'public_key') return 'public_key';
  return first === 'secret' ? 'secret' : 'token';
}

type EngineDefaults = 'credential' | 'signsUrl' | 'usesUrl' | 'signatureHeaders' | 'credentialKeys' | 'schemeOptions';

/**
 * An engine with the common answers filled in: it takes a secret, checks with what its first key
 * names, does not sign the URL, names no signature header and takes no scheme option, unless it
 * says otherwise.
 */
export function defineEngine<K extends SchemeKind>(
  engine: Omit<SchemeEngine<K>, EngineDefaults> & Partial<Pick<SchemeEngine<K>, EngineDefaults>>,
): SchemeEngine<K> {
  const credentialKeys = engine.credentialKeys ?? ['secret'];
  const signsUrl = engine.signsUrl ?? (() => false);
  return {
    ...engine,
    credentialKeys,
    credential: engine.credential ?? (() => credentialFromKeys(credentialKeys)),
    signsUrl,
    usesUrl: engine.usesUrl ?? signsUrl,
    signatureHeaders: engine.signatureHeaders ?? (() => []),
    schemeOptions: engine.schemeOptions ?? (() => []),
  };
}

/** Text as a Markdown code span that survives a table cell. */
export function code(text: string): string {
  return `\`${text.replaceAll('|', '\\|')}\``;
}
