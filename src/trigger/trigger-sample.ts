import { SERVER_HOST, SERVER_PORT } from '../../generated/constants.ts';
import type { ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { listSamples, sampleDelivery, type SampleDelivery } from '../presets/sample-deliveries.ts';

export { allSamples, listSamples, type TriggerSampleInfo } from '../presets/sample-deliveries.ts';

/** Where `switchboard trigger` sends by default: the address switchboard binds by default. */
export const DEFAULT_TRIGGER_BASE_URL = `http://${SERVER_HOST.default}:${SERVER_PORT.default}`;

export interface TriggerOptions {
  provider: ProviderConfig;
  /** A sample name from listSamples (case-insensitive); default the preset's first sample. */
  sample?: string;
  /** Where switchboard listens; default DEFAULT_TRIGGER_BASE_URL. A path prefix is kept. */
  baseUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
  timeoutMs?: number;
}

export interface TriggerResult {
  status: number;
  /** The response body as text (switchboard answers JSON). */
  body: string;
  sample: string;
  url: string;
}

/**
 * The request a real sender would make for this provider: a sample with fresh ids and timestamps,
 * signed with the first configured secret (the current one, when rotating), or carrying the first
 * token for token providers.
 */
export async function prepareTrigger(
  provider: WebhookProviderConfig,
  sampleName: string | undefined,
  nowMs: number,
): Promise<SampleDelivery> {
  const secret = provider.secrets[0];
  if (secret === undefined && (provider.trustMode === 'signed' || provider.trustMode === 'token')) {
    throw invalidArgument(
      `provider ${provider.name} has no ${provider.trustMode === 'signed' ? 'secret' : 'token'} configured, so the sample cannot be ${provider.trustMode === 'signed' ? 'signed' : 'authenticated'}`,
    );
  }
  if (provider.trustMode === 'signed' && provider.preset.sign === undefined) {
    throw invalidArgument(`preset ${provider.presetName} cannot sign`);
  }
  const prepared = await sampleDelivery(provider.preset, sampleName, secret, nowMs);
  if (prepared === undefined) {
    const available = listSamples(provider.presetName).map((s) => s.name);
    throw invalidArgument(
      `provider ${provider.name} (${provider.presetName}) has no sample "${sampleName ?? ''}"; available: ${available.join(', ')}`,
    );
  }
  return prepared;
}

/** Sends one sample event to a running switchboard, as `switchboard trigger <provider> [sample]` does. */
export async function triggerSample(options: TriggerOptions): Promise<TriggerResult> {
  const { provider } = options;
  if (provider.family !== 'webhook') {
    throw invalidArgument(
      `provider ${provider.name} is a queue provider; publish to Redis channel ${provider.channel} instead`,
    );
  }
  const prepared = await prepareTrigger(provider, options.sample, (options.now ?? Date.now)());
  const url = joinUrl(options.baseUrl ?? DEFAULT_TRIGGER_BASE_URL, provider.route);
  const doFetch = options.fetch ?? fetch;
  const response = await doFetch(url, {
    method: 'POST',
    headers: prepared.headers,
    body: new Uint8Array(prepared.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  return { status: response.status, body: await response.text(), sample: prepared.sample, url };
}

function joinUrl(base: string, route: string): string {
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw invalidArgument(`--url ${base} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw invalidArgument(`--url ${base} must be http(s)`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}${route}`;
}
