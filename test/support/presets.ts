/**
 * The presets tests check by name, built the one way production builds them (presetFor: catalog
 * entry, scheme engine, provider hooks), so a test of GitHub's preset tests what a github provider
 * runs. The Standard Webhooks reference preset is the catalog's `standard-webhooks` entry.
 */
import type { GenericHmacOptions } from '../../src/verify/engines/configured-hmac.ts';
import { presetFor } from '../../src/verify/preset-registry.ts';
import type { Preset } from '../../src/verify/preset-types.ts';

export const githubPreset: Preset = presetFor({ preset: 'github' });
export const gitlabPreset: Preset = presetFor({ preset: 'gitlab' });
export const openPreset: Preset = presetFor({ preset: 'open' });
export const shopifyPreset: Preset = presetFor({ preset: 'shopify' });
export const slackPreset: Preset = presetFor({ preset: 'slack' });
export const stripePreset: Preset = presetFor({ preset: 'stripe' });
export const standardWebhooksPreset: Preset = presetFor({ preset: 'standard-webhooks' });

/** The generic-hmac preset for these options (as config validation leaves them). */
export function createGenericHmacPreset(hmac: GenericHmacOptions): Preset {
  return presetFor({ preset: 'generic-hmac', hmac });
}

/** The generic token preset, with its default header unless one is given (config's token_header). */
export function createGenericTokenPreset(tokenHeader?: string): Preset {
  return presetFor({ preset: 'token', token_header: tokenHeader });
}
