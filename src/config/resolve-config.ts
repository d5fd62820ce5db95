import { SCHEMAS } from '../../generated/schemas.ts';
import type { Provider, SwitchboardConfig, TrustMode } from '../../generated/types.ts';
import { ConfigError } from './config-error.ts';
import { PRESET_TRUST_MODES } from '../ingest/verify/preset-registry.ts';
import { compileGenericHmacOptions } from '../ingest/verify/generic-hmac-preset.ts';
import { AppError } from '../errors/app-error.ts';

export type PresetName = NonNullable<Provider['preset']>;

export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024;

const CONFIG_SCHEMA = SCHEMAS.SwitchboardConfig.properties;
/** Defaults of the keys added by the security review, read from the schema that states them. */
export const DEFAULT_RECORD_REJECTED_MAX_BYTES =
  CONFIG_SCHEMA.providers.additionalProperties.properties.record_rejected_max_bytes.default;
export const DEFAULT_RECORD_REJECTED_PER_MINUTE = CONFIG_SCHEMA.ingest.properties.record_rejected_per_minute.default;
const DEFAULT_MAX_SESSIONS_PER_CALLER = CONFIG_SCHEMA.mcp.properties.max_sessions_per_caller.default;
const DEFAULT_MAX_STREAMS_PER_CALLER = CONFIG_SCHEMA.api.properties.max_streams_per_caller.default;
export const DEFAULT_TOLERANCE_SECONDS = 300;

interface ProviderBase {
  name: string;
  enabled: boolean;
  eventTypeFrom: string | undefined;
  externalIdFrom: string | undefined;
}

export interface WebhookProviderConfig extends ProviderBase {
  family: 'webhook';
  /** Preset actually used for verification (token and open providers get one too). */
  preset: PresetName;
  /** True when the preset was chosen by the user rather than implied by trust_mode. */
  presetExplicit: boolean;
  trustMode: Exclude<TrustMode, 'queue'>;
  route: string;
  /** Secrets (signed) or tokens (token), empty strings dropped: empty means "missing". */
  secrets: string[];
  tokenHeader: string | undefined;
  toleranceSeconds: number;
  maxBodyBytes: number;
  recordRejected: boolean;
  /** Most bytes of a rejected delivery's body that are stored. */
  recordRejectedMaxBytes: number;
  hmac: Provider['hmac'];
  resignOnReplay: boolean;
}

export interface QueueProviderConfig extends ProviderBase {
  family: 'queue';
  trustMode: 'queue';
  channel: string;
  mode: 'pubsub' | 'streams';
  pattern: boolean;
  group: string;
}

export type ProviderConfig = WebhookProviderConfig | QueueProviderConfig;

export interface BucketConfig {
  capacity: number;
  refillPerSecond: number;
}

export interface ResolvedConfig {
  providers: ProviderConfig[];
  replay: { defaultTarget: string | undefined; allow: string[]; timeoutMs: number };
  /** Passed as written to the store's retention job, which owns its rules. */
  retention: SwitchboardConfig['retention'];
  server: { host: string | undefined; port: number | undefined; allowedHosts: string[]; trustProxy: boolean };
  ingest: { recordRejectedPerMinute: number };
  mcp: { maxSessions: number; maxSessionsPerCaller: number; sessionIdleSeconds: number };
  api: { maxStreamsPerCaller: number };
  rateLimits: { read: BucketConfig; replay: BucketConfig };
  metrics: { requireAuth: boolean };
}

export const DEFAULT_RATE_LIMITS = {
  // Reads: a burst of 120 calls, then 20 per second sustained.
  read: { capacity: 120, refillPerSecond: 20 },
  // Replay makes outbound requests: a burst of 10, then one every 2 seconds.
  replay: { capacity: 10, refillPerSecond: 0.5 },
} as const;

function secretList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((s) => s !== '');
}

function resolveProvider(name: string, p: Provider): ProviderConfig {
  const at = `providers.${name}`;
  const base: ProviderBase = {
    name,
    enabled: p.enabled ?? true,
    eventTypeFrom: p.event_type_from,
    externalIdFrom: p.external_id_from,
  };
  const family = p.family ?? (p.trust_mode === 'queue' ? 'queue' : 'webhook');
  if (family === 'queue') {
    if (p.trust_mode !== undefined && p.trust_mode !== 'queue') {
      throw new ConfigError(`${at}.trust_mode: a queue provider's trust_mode is queue`);
    }
    for (const key of ['preset', 'secret', 'token', 'route', 'hmac'] as const) {
      if (p[key] !== undefined) throw new ConfigError(`${at}.${key}: not allowed for a queue provider`);
    }
    if (p.channel === undefined) throw new ConfigError(`${at}.channel: required for a queue provider`);
    const mode = p.mode ?? 'pubsub';
    if (p.pattern && mode !== 'pubsub') throw new ConfigError(`${at}.pattern: only pubsub mode takes a pattern`);
    return {
      ...base,
      family: 'queue',
      trustMode: 'queue',
      channel: p.channel,
      mode,
      pattern: p.pattern ?? false,
      group: p.group ?? 'switchboard',
    };
  }
  for (const key of ['channel', 'mode', 'pattern', 'group'] as const) {
    if (p[key] !== undefined) throw new ConfigError(`${at}.${key}: only queue providers take ${key}`);
  }
  if (p.trust_mode === 'queue') throw new ConfigError(`${at}.trust_mode: queue needs family: queue`);
  if (p.preset === undefined && p.trust_mode === undefined) {
    throw new ConfigError(`${at}: set a preset (github, stripe, …) or trust_mode (token or open)`);
  }
  if (p.preset === undefined && p.trust_mode === 'signed') {
    throw new ConfigError(`${at}.preset: a signed provider needs a preset that says how it is signed`);
  }
  // Without a preset, trust_mode is token or open here, and each has a preset of the same name.
  const preset: PresetName = p.preset ?? (p.trust_mode === 'token' ? 'token' : 'open');
  const trustMode = PRESET_TRUST_MODES[preset];
  if (trustMode === 'queue') throw new ConfigError(`${at}.preset: ${preset} is not a webhook preset`);
  if (p.trust_mode !== undefined && p.trust_mode !== trustMode) {
    throw new ConfigError(`${at}.trust_mode: preset ${preset} is ${trustMode}, not ${p.trust_mode}`);
  }
  if (preset === 'generic-hmac' && p.hmac === undefined) {
    throw new ConfigError(`${at}.hmac: the generic-hmac preset needs hmac.header (and algorithm, encoding)`);
  }
  if (p.hmac !== undefined && preset === 'generic-hmac') {
    try {
      compileGenericHmacOptions(p.hmac);
    } catch (err) {
      if (err instanceof AppError) throw new ConfigError(`${at}.${err.message}`);
      throw err;
    }
  }
  if (preset !== 'generic-hmac' && p.hmac !== undefined) {
    throw new ConfigError(`${at}.hmac: only the generic-hmac preset takes hmac`);
  }
  if (trustMode === 'signed' && p.token !== undefined) {
    throw new ConfigError(`${at}.token: a signed provider takes secret, not token`);
  }
  if (trustMode === 'token' && p.secret !== undefined) {
    throw new ConfigError(`${at}.secret: a token provider takes token, not secret`);
  }
  if (trustMode === 'open' && (p.secret !== undefined || p.token !== undefined)) {
    throw new ConfigError(`${at}: an open provider checks nothing, so it takes no secret or token`);
  }
  if (p.token_header !== undefined && preset !== 'token') {
    throw new ConfigError(`${at}.token_header: only the token preset takes token_header`);
  }
  return {
    ...base,
    family: 'webhook',
    preset,
    presetExplicit: p.preset !== undefined,
    trustMode,
    route: p.route ?? `/hooks/${name}`,
    secrets: trustMode === 'signed' ? secretList(p.secret) : secretList(p.token),
    tokenHeader: p.token_header,
    toleranceSeconds: p.tolerance_seconds ?? DEFAULT_TOLERANCE_SECONDS,
    maxBodyBytes: p.max_body_bytes ?? DEFAULT_MAX_BODY_BYTES,
    recordRejected: p.record_rejected ?? true,
    recordRejectedMaxBytes: p.record_rejected_max_bytes ?? DEFAULT_RECORD_REJECTED_MAX_BYTES,
    hmac: p.hmac,
    resignOnReplay: p.replay?.resign ?? true,
  };
}

/** Applies defaults and the rules a schema cannot express (preset and trust_mode agreeing, unique routes). */
export function resolveConfig(config: SwitchboardConfig): ResolvedConfig {
  const providers = Object.entries(config.providers ?? {}).flatMap(([name, p]) =>
    p === undefined ? [] : [resolveProvider(name, p)],
  );
  const routes = new Map<string, string>();
  for (const p of providers) {
    if (p.family !== 'webhook') continue;
    if (p.route === '/mcp' || p.route.startsWith('/mcp/') || p.route.startsWith('/api/') || p.route === '/api') {
      throw new ConfigError(`providers.${p.name}.route: ${p.route} is reserved for switchboard itself`);
    }
    const clash = routes.get(p.route);
    if (clash !== undefined) throw new ConfigError(`providers.${p.name}.route: ${p.route} is already used by ${clash}`);
    routes.set(p.route, p.name);
  }
  const bucket = (b: { capacity?: number; refill_per_second?: number } | undefined, d: BucketConfig): BucketConfig => ({
    capacity: b?.capacity ?? d.capacity,
    refillPerSecond: b?.refill_per_second ?? d.refillPerSecond,
  });
  return {
    providers,
    replay: {
      defaultTarget: config.replay?.default_target,
      allow: config.replay?.allow ?? [],
      timeoutMs: config.replay?.timeout_ms ?? 10_000,
    },
    retention: config.retention,
    server: {
      host: config.server?.host,
      port: config.server?.port,
      allowedHosts: config.server?.allowed_hosts ?? [],
      trustProxy: config.server?.trust_proxy ?? false,
    },
    ingest: {
      recordRejectedPerMinute: config.ingest?.record_rejected_per_minute ?? DEFAULT_RECORD_REJECTED_PER_MINUTE,
    },
    mcp: {
      maxSessions: config.mcp?.max_sessions ?? 100,
      maxSessionsPerCaller: config.mcp?.max_sessions_per_caller ?? DEFAULT_MAX_SESSIONS_PER_CALLER,
      sessionIdleSeconds: config.mcp?.session_idle_seconds ?? 1800,
    },
    api: { maxStreamsPerCaller: config.api?.max_streams_per_caller ?? DEFAULT_MAX_STREAMS_PER_CALLER },
    rateLimits: {
      read: bucket(config.rate_limits?.read, DEFAULT_RATE_LIMITS.read),
      replay: bucket(config.rate_limits?.replay, DEFAULT_RATE_LIMITS.replay),
    },
    metrics: { requireAuth: config.metrics?.require_auth ?? true },
  };
}
