import type { PresetName, QueueMode } from '../../generated/constants.ts';
import type { ProviderWithDefaults, SwitchboardConfigWithDefaults, TrustMode } from '../../generated/types.ts';
import { validateSwitchboardConfig } from '../../generated/validators.js';
import { AppError } from '../errors/app-error.ts';
import { schemaErrorLines } from '../errors/schema-errors.ts';
import { presetFor } from '../presets/preset-registry.ts';
import type { Preset } from '../presets/preset-types.ts';
import { ConfigError } from './config-error.ts';
import { resolveForwardRules, type ForwardRuleConfig } from './forward-rules.ts';

interface ProviderBase {
  name: string;
  enabled: boolean;
  eventTypeFrom: string | undefined;
  externalIdFrom: string | undefined;
}

export interface WebhookProviderConfig extends ProviderBase {
  family: 'webhook';
  /** The preset's name, as configured or implied by trust_mode (token and open providers get one too). */
  presetName: PresetName;
  /** Built once, here: ingest verifies with it, replay and trigger sign with it. */
  preset: Preset;
  trustMode: Exclude<TrustMode, 'queue'>;
  route: string;
  /** Secrets (signed) or tokens (token), empty strings dropped: empty means "missing". */
  secrets: string[];
  toleranceSeconds: number;
  maxBodyBytes: number;
  recordRejected: boolean;
  /** Most bytes of a rejected delivery's body that are stored. */
  recordRejectedMaxBytes: number;
  resignOnReplay: boolean;
  /** generic-hmac only: how it signs, as configured (GET /api/providers/{name} shows it; never a secret). */
  hmac?: NonNullable<ProviderWithDefaults['hmac']>;
}

export interface QueueProviderConfig extends ProviderBase {
  family: 'queue';
  trustMode: 'queue';
  channel: string;
  mode: QueueMode;
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
  /** forward: rules, in the config's order; targets are checked at start-up. */
  forward: ForwardRuleConfig[];
  /** Passed as written (defaults filled in) to the store's retention job, which owns its rules. */
  retention: SwitchboardConfigWithDefaults['retention'];
  server: { host: string; port: number; allowedHosts: string[]; trustProxy: boolean };
  ingest: { recordRejectedPerMinute: number };
  mcp: { maxSessions: number; maxSessionsPerCaller: number; maxWaitsPerCaller: number; sessionIdleSeconds: number };
  api: { maxStreamsPerCaller: number };
  rateLimits: { read: BucketConfig; replay: BucketConfig };
  metrics: { requireAuth: boolean };
}

/**
 * A value the schema gives a default only under a condition (the queue-only keys, and family
 * itself, depend on the provider's family): validation filled it, but its type cannot say so.
 */
function filled<T>(value: T | undefined, at: string): T {
  if (value === undefined) throw new Error(`${at}: config validation left no value; the schema lost its default`);
  return value;
}

function secretList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((s) => s !== '');
}

function buildPreset(at: string, options: Parameters<typeof presetFor>[0]): Preset {
  try {
    return presetFor(options);
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(`${at}.${err.message}`);
    throw err;
  }
}

function resolveProvider(name: string, p: ProviderWithDefaults): ProviderConfig {
  const at = `providers.${name}`;
  const base: ProviderBase = {
    name,
    enabled: p.enabled,
    eventTypeFrom: p.event_type_from,
    externalIdFrom: p.external_id_from,
  };
  const family = filled(p.family, `${at}.family`);
  if (family === 'queue') {
    if (p.trust_mode !== undefined && p.trust_mode !== 'queue') {
      throw new ConfigError(`${at}.trust_mode: a queue provider's trust_mode is queue`);
    }
    for (const key of ['preset', 'secret', 'token', 'route', 'hmac'] as const) {
      if (p[key] !== undefined) throw new ConfigError(`${at}.${key}: not allowed for a queue provider`);
    }
    if (p.channel === undefined) throw new ConfigError(`${at}.channel: required for a queue provider`);
    const mode = filled(p.mode, `${at}.mode`);
    const pattern = filled(p.pattern, `${at}.pattern`);
    if (pattern && mode !== 'pubsub') throw new ConfigError(`${at}.pattern: only pubsub mode takes a pattern`);
    return {
      ...base,
      family: 'queue',
      trustMode: 'queue',
      channel: p.channel,
      mode,
      pattern,
      group: filled(p.group, `${at}.group`),
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
  const presetName: PresetName = p.preset ?? (p.trust_mode === 'token' ? 'token' : 'open');
  if (presetName === 'generic-hmac' && p.hmac === undefined) {
    throw new ConfigError(`${at}.hmac: the generic-hmac preset needs hmac.header (and algorithm, encoding)`);
  }
  if (presetName !== 'generic-hmac' && p.hmac !== undefined) {
    throw new ConfigError(`${at}.hmac: only the generic-hmac preset takes hmac`);
  }
  if (p.token_header !== undefined && presetName !== 'token') {
    throw new ConfigError(`${at}.token_header: only the token preset takes token_header`);
  }
  const preset = buildPreset(at, {
    preset: presetName,
    token_header: p.token_header,
    hmac: p.hmac,
    event_type_from: p.event_type_from,
    external_id_from: p.external_id_from,
  });
  const trustMode = preset.trustMode;
  if (p.trust_mode !== undefined && p.trust_mode !== trustMode) {
    throw new ConfigError(`${at}.trust_mode: preset ${presetName} is ${trustMode}, not ${p.trust_mode}`);
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
  return {
    ...base,
    family: 'webhook',
    presetName,
    preset,
    trustMode,
    route: p.route ?? `/hooks/${name}`,
    secrets: trustMode === 'signed' ? secretList(p.secret) : secretList(p.token),
    toleranceSeconds: p.tolerance_seconds,
    maxBodyBytes: p.max_body_bytes,
    recordRejected: p.record_rejected,
    recordRejectedMaxBytes: p.record_rejected_max_bytes,
    resignOnReplay: p.replay.resign,
    ...(p.hmac === undefined ? {} : { hmac: p.hmac }),
  };
}

/** Checks a config against the schema and fills in the schema's defaults, on a copy. */
function validated(config: unknown): SwitchboardConfigWithDefaults {
  const copy: unknown = structuredClone(config);
  if (!validateSwitchboardConfig(copy)) {
    throw new ConfigError(
      `invalid config:\n  ${schemaErrorLines(validateSwitchboardConfig.errors, '(root)').join('\n  ')}`,
    );
  }
  return copy;
}

/**
 * The config as the server uses it: validated against the schema (which supplies every default),
 * then the rules a schema cannot express (preset and trust_mode agreeing, unique routes), each
 * provider's preset built once.
 */
export function resolveConfig(raw: unknown): ResolvedConfig {
  const config = validated(raw);
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
  const { replay, server, mcp, rate_limits: limits } = config;
  return {
    providers,
    replay: { defaultTarget: replay.default_target, allow: replay.allow, timeoutMs: replay.timeout_ms },
    forward: resolveForwardRules(
      config.forward,
      providers.map((p) => p.name),
    ),
    retention: config.retention,
    server: {
      host: server.host,
      port: server.port,
      allowedHosts: server.allowed_hosts,
      trustProxy: server.trust_proxy,
    },
    ingest: { recordRejectedPerMinute: config.ingest.record_rejected_per_minute },
    mcp: {
      maxSessions: mcp.max_sessions,
      maxSessionsPerCaller: mcp.max_sessions_per_caller,
      maxWaitsPerCaller: mcp.max_waits_per_caller,
      sessionIdleSeconds: mcp.session_idle_seconds,
    },
    api: { maxStreamsPerCaller: config.api.max_streams_per_caller },
    rateLimits: {
      read: { capacity: limits.read.capacity, refillPerSecond: limits.read.refill_per_second },
      replay: { capacity: limits.replay.capacity, refillPerSecond: limits.replay.refill_per_second },
    },
    metrics: { requireAuth: config.metrics.require_auth },
  };
}
