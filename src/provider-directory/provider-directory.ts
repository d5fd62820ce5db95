import type { ApiProviderDetail, ProviderStatus } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';

export type QueueConnectionState = NonNullable<ProviderStatus['connection']>;

/** What list_providers, /api/providers and the UI show: configuration and health, never a secret. */
function providerStatus(p: ProviderConfig, connection: QueueConnectionState | undefined): ProviderStatus {
  if (p.family === 'queue') {
    return {
      name: p.name,
      family: 'queue',
      trust_mode: 'queue',
      enabled: p.enabled,
      secret_status: 'none-by-design',
      credential: 'none',
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
    secret_status: !needsSecret
      ? 'none-by-design'
      : p.secrets.length + p.publicKeys.length > 0
        ? 'configured'
        : 'missing',
    // What secret_status is about, so a public key is not called a secret where a person reads it.
    credential: p.preset.credential,
    route: p.route,
  };
}

export interface ProviderDirectory {
  list(): ProviderStatus[];
  /** One provider with how it signs (hmac options, token header), for clients that sign themselves. */
  detail(name: string): ApiProviderDetail | undefined;
}

export function createProviderDirectory(
  providers: readonly ProviderConfig[],
  queueConnection: (name: string) => QueueConnectionState | undefined,
): ProviderDirectory {
  const statusOf = (p: ProviderConfig): ProviderStatus =>
    providerStatus(p, p.family === 'queue' ? queueConnection(p.name) : undefined);
  return {
    list: () => providers.map(statusOf),
    detail: (name) => {
      const p = providers.find((candidate) => candidate.name === name);
      if (p === undefined) return undefined;
      if (p.family === 'queue') return { provider: statusOf(p) };
      const tokenHeader = p.trustMode === 'token' ? p.preset.tokenHeader : undefined;
      return {
        provider: statusOf(p),
        // Config, not the catalog alone: standard-webhooks turns public-key with `public_key: whpk_…`.
        verifies_with_public_key: p.preset.credential === 'public_key',
        ...(p.hmac === undefined ? {} : { hmac: p.hmac }),
        // Not a secret: it is what the provider is given, and a client signing as it signs over it.
        ...(p.publicUrl === undefined ? {} : { public_url: p.publicUrl }),
        ...(tokenHeader === undefined ? {} : { token_header: tokenHeader }),
        ...(tokenHeader === undefined || p.tokenVariable === undefined ? {} : { token_variable: p.tokenVariable }),
      };
    },
  };
}
