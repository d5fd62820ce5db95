import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { catalogIdentify, catalogSummarize } from './catalog-identity.ts';
import { createGenericHmacPreset } from './generic-hmac-preset.ts';
import { githubPreset } from './github-preset.ts';
import { genericIdentity, LazyBody, type FieldSource, parseFieldSource, withIdentityOverrides } from './identify.ts';
import { linearPreset } from './linear-preset.ts';
import { openPreset } from './open-preset.ts';
import { shopifyPreset } from './shopify-preset.ts';
import { slackPreset } from './slack-preset.ts';
import {
  identifyStandardWebhooks,
  standardWebhooksScheme,
  summarizeStandardWebhooks,
} from './standard-webhooks-preset.ts';
import { stripePreset } from './stripe-preset.ts';
import { createGenericTokenPreset, createTokenPreset, gitlabPreset } from './token-preset.ts';
import type { CredentialKind, Preset } from './preset-types.ts';
import { presetOptionProblem, type ProviderKeys } from './preset-options.ts';
import { createHmacScheme } from './schemes/hmac-scheme.ts';
import { createBodySignatureScheme } from './schemes/body-signature-scheme.ts';
import { createBasicScheme, createPasscodeScheme } from './schemes/credential-schemes.ts';
import { createJwtScheme } from './schemes/jwt-scheme.ts';
import { createEcdsaScheme, createEd25519Scheme } from './schemes/public-key-schemes.ts';
import { createTwilioScheme } from './schemes/twilio-scheme.ts';

export function isPresetName(value: unknown): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value);
}

/** A preset's catalog entry: its scheme, headers, samples, handshake and proof. */
export function catalogEntry(name: PresetName): ProviderCatalogEntry {
  return PROVIDER_CATALOG[name];
}

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

/**
 * The credential a preset checks with: what config must give and what replay can attach. Standard
 * Webhooks takes either: configured with whpk_ public keys only, it is asymmetric.
 */
export function credentialOf(
  entry: ProviderCatalogEntry,
  options?: Pick<PresetOptions, 'secret' | 'public_key'>,
): CredentialKind {
  if (entry.scheme.kind === 'standard-webhooks') {
    return options?.public_key !== undefined && options.secret === undefined ? 'public_key' : 'secret';
  }
  switch (entry.scheme.kind) {
    case 'ed25519':
    case 'ecdsa-p256':
      return 'public_key';
    case 'token':
    case 'basic':
    case 'passcode':
      return 'token';
    case 'open':
      return 'none';
    default:
      return 'secret';
  }
}

/**
 * The presets that predate the catalog. github, stripe, slack, shopify and linear check and sign on
 * the shared HMAC engine with their catalog entries (catalogHmacPreset), and all but slack take their
 * event type and id from their entries' identify too; how they summarise events (and how slack
 * names them) is code of their own. generic-hmac is the user's scheme on that engine; gitlab,
 * token and open are the credential presets.
 */
function codePreset(options: PresetOptions): Preset | undefined {
  switch (options.preset) {
    case 'github':
      return githubPreset;
    case 'stripe':
      return stripePreset;
    case 'slack':
      return slackPreset;
    case 'shopify':
      return shopifyPreset;
    case 'linear':
      return linearPreset;
    case 'generic-hmac':
      if (options.hmac === undefined)
        throw invalidArgument('preset generic-hmac needs hmac options (at least hmac.header)');
      return createGenericHmacPreset(options.hmac);
    case 'token':
      return createGenericTokenPreset(options.token_header);
    case 'gitlab':
      return gitlabPreset;
    case 'open':
      return openPreset;
    default:
      return undefined;
  }
}

type Verification = Pick<Preset, 'requiredHeaders' | 'sensitiveHeaders' | 'verify'> &
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

/** A catalog provider's verification, from its scheme and that scheme's parameters. */
function schemeVerification(entry: ProviderCatalogEntry, options: PresetOptions): Verification {
  const where = `preset ${entry.name}`;
  const { scheme } = entry;
  switch (scheme.kind) {
    case 'hmac':
      return createHmacScheme(scheme, where, { publicUrl: options.public_url });
    case 'twilio':
      return createTwilioScheme(where, options.public_url);
    case 'basic':
      return createBasicScheme();
    case 'passcode':
      return createPasscodeScheme(scheme.pointer ?? '/passcode');
    case 'body-signature':
      return createBodySignatureScheme(scheme);
    case 'jwt-hs256':
      return createJwtScheme(scheme, { publicUrl: options.public_url });
    case 'standard-webhooks':
      return standardWebhooksScheme(scheme.key ?? 'whsec', credentialOf(entry, options) === 'public_key');
    case 'ed25519':
      return { ...createEd25519Scheme(scheme, where), sensitiveHeaders: [] };
    case 'ecdsa-p256':
      return { ...createEcdsaScheme(scheme, where), sensitiveHeaders: [] };
    case 'token': {
      // Only the check: the preset's name, identity and summary are the entry's (basePreset), so
      // trigger finds this preset's samples and events are named as its templates say.
      const token = createTokenPreset({
        name: 'token',
        header: scheme.header ?? 'X-Webhook-Token',
        acceptBearer: scheme.bearer === true,
        identify: () => ({ eventType: 'unknown', externalId: null }),
        summarize: () => null,
      });
      const { requiredHeaders, sensitiveHeaders, tokenHeader, verify } = token;
      return { requiredHeaders, sensitiveHeaders, verify, ...(tokenHeader === undefined ? {} : { tokenHeader }) };
    }
    default:
      throw invalidArgument(`${where}: scheme ${scheme.kind} is not built here`);
  }
}

function fallbackIdentify(entry: ProviderCatalogEntry): Preset['identify'] {
  if (entry.scheme.kind === 'standard-webhooks') return identifyStandardWebhooks;
  return (body, headers, parsed) => genericIdentity(parsed ?? new LazyBody(body), headers);
}

function basePreset(options: PresetOptions): Preset {
  const entry = catalogEntry(options.preset);
  const credential = credentialOf(entry, options);
  const handshake = entry.handshake === undefined ? {} : { handshake: entry.handshake };
  const code = codePreset(options);
  if (code !== undefined) return { ...code, credential, ...handshake };
  const verification = schemeVerification(entry, options);
  return {
    name: options.preset,
    trustMode: credential === 'token' ? 'token' : credential === 'none' ? 'open' : 'signed',
    credential,
    ...handshake,
    ...verification,
    identify: catalogIdentify(entry) ?? fallbackIdentify(entry),
    summarize:
      entry.summary === undefined && entry.scheme.kind === 'standard-webhooks'
        ? summarizeStandardWebhooks
        : catalogSummarize(entry),
  };
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
