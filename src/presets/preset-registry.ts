import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import type { ProviderWithDefaults } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { createGenericHmacPreset } from './generic-hmac-preset.ts';
import { githubPreset } from './github-preset.ts';
import { type FieldSource, parseFieldSource, withIdentityOverrides } from './identify.ts';
import { linearPreset } from './linear-preset.ts';
import { openPreset } from './open-preset.ts';
import { shopifyPreset } from './shopify-preset.ts';
import { slackPreset } from './slack-preset.ts';
import { standardWebhooksPreset } from './standard-webhooks-preset.ts';
import { stripePreset } from './stripe-preset.ts';
import { createGenericTokenPreset, gitlabPreset } from './token-preset.ts';
import type { Preset } from './preset-types.ts';

export function isPresetName(value: unknown): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value);
}

/**
 * The verification part of a provider's config, as the config file writes it (snake_case) and
 * validation leaves it (defaults filled in); `preset` is the one resolved from preset or trust_mode.
 */
export type PresetOptions = Pick<
  ProviderWithDefaults,
  'token_header' | 'hmac' | 'event_type_from' | 'external_id_from'
> & {
  preset: PresetName;
};

function basePreset(options: PresetOptions): Preset {
  switch (options.preset) {
    case 'github':
      return githubPreset;
    case 'stripe':
      return stripePreset;
    case 'slack':
      return slackPreset;
    case 'shopify':
      return shopifyPreset;
    case 'standard-webhooks':
      return standardWebhooksPreset;
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
  }
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
  if (options.token_header !== undefined && options.preset !== 'token') {
    throw invalidArgument(`token_header only applies to the token preset, not ${options.preset}`);
  }
  if (options.hmac !== undefined && options.preset !== 'generic-hmac') {
    throw invalidArgument(`hmac options only apply to the generic-hmac preset, not ${options.preset}`);
  }
  const eventTypeFrom: FieldSource | undefined =
    options.event_type_from === undefined ? undefined : parseFieldSource(options.event_type_from, 'event_type_from');
  const externalIdFrom: FieldSource | undefined =
    options.external_id_from === undefined ? undefined : parseFieldSource(options.external_id_from, 'external_id_from');
  const base = basePreset(options);
  if (eventTypeFrom === undefined && externalIdFrom === undefined) return base;
  return { ...base, identify: withIdentityOverrides(base.identify, { eventTypeFrom, externalIdFrom }) };
}
