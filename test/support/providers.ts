/** Providers from a config fragment, resolved the way the server resolves them (schema defaults included). */
import type { SwitchboardConfig } from '../../generated/types.ts';
import { resolveConfig, type ProviderConfig, type WebhookProviderConfig } from '../../src/config/resolve-config.ts';

export function providersFrom(providers: NonNullable<SwitchboardConfig['providers']>): ProviderConfig[] {
  return resolveConfig({ providers }).providers;
}

export function webhookProvider(providers: readonly ProviderConfig[], name: string): WebhookProviderConfig {
  const provider = providers.find((p) => p.name === name);
  if (provider?.family !== 'webhook') throw new Error(`no webhook provider ${name}`);
  return provider;
}
