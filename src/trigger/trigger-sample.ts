import { SERVER_HOST, SERVER_PORT } from '../../generated/constants.ts';
import type { ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { engineFor } from '../verify/engines/engine-registry.ts';
import { catalogEntry } from '../verify/preset-registry.ts';
import { listSamples, sampleDelivery, type SampleDelivery } from '../verify/sample-deliveries.ts';
import { InternalError } from '../errors/internal-error.ts';

/** Where `switchboard trigger` sends by default: the address switchboard binds by default. */
const DEFAULT_TRIGGER_BASE_URL = `http://${SERVER_HOST.default}:${SERVER_PORT.default}`;

/** Nothing answered at the URL: the message names it and the cause (refused, timeout, DNS). */
export class TriggerUnreachableError extends InternalError {
  readonly code = 'SB_ERR_TRIGGER_UNREACHABLE';
  readonly url: string;

  constructor(url: string, cause: unknown, timeoutMs: number) {
    super(`could not reach switchboard at ${url}: ${describeFetchFailure(cause, timeoutMs)}`, { cause });
    this.url = url;
  }
}

/** The first error code along an error's cause chain (undici puts the socket's under `cause`). */
function errorCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if ('code' in current && typeof current.code === 'string') return current.code;
    // A host with several addresses (localhost: ::1 and 127.0.0.1) fails with one error per address.
    if (current instanceof AggregateError) {
      const inner = current.errors.map(errorCode).find((code) => code !== undefined);
      if (inner !== undefined) return inner;
    }
    current = current.cause;
  }
  return undefined;
}

/** Why a fetch got no answer, in words. */
function describeFetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs / 1000} s (timeout)`;
  }
  const code = errorCode(error);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused: nothing listens there';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `the host name was not found (DNS, ${code})`;
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed before an answer came';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'the connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `the host cannot be reached (${code})`;
    default: {
      const message = error instanceof Error ? error.message : String(error);
      return code === undefined ? message : `${message} (${code})`;
    }
  }
}

export interface TriggerOptions {
  provider: ProviderConfig;
  /** A sample name from listSamples (case-insensitive); default the preset's first sample. */
  sample?: string | undefined;
  /** Where switchboard listens; default DEFAULT_TRIGGER_BASE_URL. A path prefix is kept. */
  baseUrl?: string | undefined;
  /** The provider's `${VAR}`s that are not set here (`${GITHUB_WEBHOOK_SECRET}`), named when it has no secret. */
  unsetPlaceholders?: readonly string[];
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
 * @internal outside src/, only tests or benches use it
 */
export function prepareTrigger(
  provider: WebhookProviderConfig,
  sampleName: string | undefined,
  nowMs: number,
  unsetPlaceholders: readonly string[] = [],
): SampleDelivery {
  if (provider.preset.credential === 'public_key') throw cannotSignAsymmetric(provider);
  const secret = provider.secrets[0];
  if (secret === undefined && (provider.trustMode === 'signed' || provider.trustMode === 'token')) {
    const what = provider.trustMode === 'signed' ? 'secret' : 'token';
    const done = provider.trustMode === 'signed' ? 'signed' : 'authenticated';
    // serve names the variable in its banner; so does trigger, which may run in a shell without it.
    const unset =
      unsetPlaceholders.length === 0
        ? ''
        : `: ${unsetPlaceholders.join(', ')} ${unsetPlaceholders.length === 1 ? 'is' : 'are'} not set in trigger's environment`;
    throw invalidArgument(
      `provider ${provider.name} has no ${what} configured${unset}, so the sample cannot be ${done}`,
    );
  }
  if (provider.trustMode === 'signed' && provider.preset.sign === undefined && provider.preset.signBody === undefined) {
    throw invalidArgument(`preset ${provider.presetName} cannot sign`);
  }
  const prepared = sampleDelivery(provider.preset, sampleName, secret, nowMs);
  if (prepared === undefined) {
    const available = listSamples(provider.presetName).map((s) => s.name);
    throw invalidArgument(
      `provider ${provider.name} (${provider.presetName}) has no sample "${sampleName ?? ''}"; available: ${available.join(', ')}`,
    );
  }
  return prepared;
}

/**
 * An asymmetric preset checks the provider's signature with its public key; the private key never
 * leaves the provider, so no sample switchboard makes could pass. Says so, and what works instead.
 */
function cannotSignAsymmetric(provider: WebhookProviderConfig): Error {
  const { scheme } = catalogEntry(provider.presetName);
  const algorithm = engineFor(scheme).privateKeyAlgorithm ?? 'a public-key';
  return invalidArgument(
    `provider ${provider.name} (preset ${provider.presetName}) checks ${algorithm} signature with the provider's public key; ` +
      'only the provider holds the private key, so switchboard cannot sign a sample for it. ' +
      "Send a test event from the provider's dashboard instead, or replay a stored one (it keeps its original signature).",
  );
}

/** Sends one sample event to a running switchboard, as `switchboard trigger <provider> [sample]` does. */
export async function triggerSample(options: TriggerOptions): Promise<TriggerResult> {
  const { provider } = options;
  if (provider.family !== 'webhook') {
    throw invalidArgument(
      `provider ${provider.name} is a queue provider; publish to Redis channel ${provider.channel} instead`,
    );
  }
  const prepared = prepareTrigger(provider, options.sample, (options.now ?? Date.now)(), options.unsetPlaceholders);
  const url = joinUrl(options.baseUrl ?? DEFAULT_TRIGGER_BASE_URL, provider.route);
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  try {
    const response = await doFetch(url, {
      method: 'POST',
      headers: prepared.headers,
      body: new Uint8Array(prepared.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, body: await response.text(), sample: prepared.sample, url };
  } catch (error) {
    throw new TriggerUnreachableError(url, error, timeoutMs);
  }
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
