/**
 * The provider code that the catalog's data cannot say: how a few providers summarise their events
 * (GitHub, GitLab, Linear, Shopify, Slack, Stripe), how Slack names them, and a header GitHub signs
 * in that its scheme does not read. A preset is its entry run by its scheme's engine, with these
 * on top; a provider with no hooks is data only.
 */
import type { PresetName } from '../../../generated/constants.ts';
import type { ProviderHooks } from '../preset-types.ts';
import { githubHooks } from './github.ts';
import { gitlabHooks } from './gitlab.ts';
import { linearHooks } from './linear.ts';
import { shopifyHooks } from './shopify.ts';
import { slackHooks } from './slack.ts';
import { stripeHooks } from './stripe.ts';

export const PROVIDER_HOOKS: Partial<Readonly<Record<PresetName, ProviderHooks>>> = {
  github: githubHooks,
  gitlab: gitlabHooks,
  linear: linearHooks,
  shopify: shopifyHooks,
  slack: slackHooks,
  stripe: stripeHooks,
};
