import { invalidArgument } from '../errors/app-error.ts';
import { createGenericHmacPreset, type GenericHmacOptions } from './generic-hmac-preset.ts';
import { githubPreset } from './github-preset.ts';
import { type FieldSource, parseFieldSource, withIdentityOverrides } from './identify.ts';
import { linearPreset } from './linear-preset.ts';
import { openPreset } from './open-preset.ts';
import { shopifyPreset } from './shopify-preset.ts';
import { slackPreset } from './slack-preset.ts';
import { standardWebhooksPreset } from './standard-webhooks-preset.ts';
import { stripePreset } from './stripe-preset.ts';
import { createGenericTokenPreset, gitlabPreset } from './token-preset.ts';
import type { Preset, TrustMode } from './preset-types.ts';

export const PRESET_NAMES = [
  'github',
  'stripe',
  'slack',
  'shopify',
  'standard-webhooks',
  'linear',
  'generic-hmac',
  'token',
  'gitlab',
  'open',
] as const;

export type PresetName = (typeof PRESET_NAMES)[number];

/** The trust mode each preset implies, for config validation and display without building one. */
export const PRESET_TRUST_MODES: Readonly<Record<PresetName, TrustMode>> = {
  github: 'signed',
  stripe: 'signed',
  slack: 'signed',
  shopify: 'signed',
  'standard-webhooks': 'signed',
  linear: 'signed',
  'generic-hmac': 'signed',
  token: 'token',
  gitlab: 'token',
  open: 'open',
};

export function isPresetName(value: unknown): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value);
}

/** The verification part of a provider's config (snake_case, as in the config file). */
export interface PresetOptions {
  preset: PresetName;
  /** token preset only: the header carrying the token; default X-Webhook-Token. */
  token_header?: string;
  /** generic-hmac only (and required there): see GenericHmacOptions. */
  hmac?: GenericHmacOptions;
  /** `header:<Name>` or a JSON pointer such as `/type`; overrides the preset's own event type. */
  event_type_from?: string;
  /** `header:<Name>` or a JSON pointer such as `/id`; overrides the preset's own external id. */
  external_id_from?: string;
}

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
 * Builds the preset a provider's config describes. Options that the chosen preset would silently
 * ignore are rejected instead, because a token_header on a github provider, say, means the operator
 * believes something is checked that is not. event_type_from / external_id_from apply to every
 * preset; when they find nothing in a delivery, the preset's own answer is used.
 */
export function buildPreset(options: PresetOptions): Preset {
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
