/** What the Shell needs to know about the server once signed in: its config, its forward rules, its providers. */
import type { ProviderStatus } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { useLoaded, usePolled } from '../hooks/use-polled.ts';

// Queue connection states change on their own; the providers are read again this often.
const PROVIDERS_REFRESH_MS = 10_000;

export interface ServerFacts {
  /** replay.default_target, which the replay form starts with. */
  defaultTarget: string | null;
  /** The caller name of the server's own token, shown as "server token" in the replay history. */
  serverTokenCaller: string | null;
  /** How to run the CLI where the server runs, once known (GET /api/config cli_command). */
  cliCommand: string | null;
  /** Whether any forward rule is configured: the detail then has a Forwarding tab. */
  forwarding: boolean;
  providers: ProviderStatus[] | null;
  providersError: string | null;
}

export function useServerFacts(api: ApiClient): ServerFacts {
  const config = useLoaded(() => api.config(), [api], 'Could not load the configuration.');
  const forwards = useLoaded(() => api.forwards(), [api], 'Could not load forward rules.');
  const providers = usePolled(() => api.providers(), [api], {
    failure: 'Could not load providers.',
    everyMs: PROVIDERS_REFRESH_MS,
  });
  return {
    defaultTarget: config.value?.replay.default_target ?? null,
    serverTokenCaller: config.value?.server_token_caller ?? null,
    cliCommand: config.value?.cli_command ?? null,
    forwarding: (forwards.value?.rules.length ?? 0) > 0,
    providers: providers.value?.providers ?? null,
    providersError: providers.error,
  };
}
