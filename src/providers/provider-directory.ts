import type { ProviderStatus } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';

export type QueueConnectionState = NonNullable<ProviderStatus['connection']>;

/** What list_providers, /api/providers and the UI show: configuration and health, never a secret. */
export function providerStatus(p: ProviderConfig, connection: QueueConnectionState | undefined): ProviderStatus {
  if (p.family === 'queue') {
    return {
      name: p.name,
      family: 'queue',
      trust_mode: 'queue',
      enabled: p.enabled,
      secret_status: 'none-by-design',
      channel: p.channel,
      mode: p.mode,
      connection: connection ?? 'disconnected',
    };
  }
  const needsSecret = p.trustMode === 'signed' || p.trustMode === 'token';
  return {
    name: p.name,
    family: 'webhook',
    preset: p.presetName,
    trust_mode: p.trustMode,
    enabled: p.enabled,
    secret_status: !needsSecret ? 'none-by-design' : p.secrets.length > 0 ? 'configured' : 'missing',
    route: p.route,
  };
}

export interface ProviderDirectory {
  list(): ProviderStatus[];
}

export function createProviderDirectory(
  providers: readonly ProviderConfig[],
  queueConnection: (name: string) => QueueConnectionState | undefined,
): ProviderDirectory {
  return {
    list: () => providers.map((p) => providerStatus(p, p.family === 'queue' ? queueConnection(p.name) : undefined)),
  };
}
