import type { PresetName, QueueMode } from '../../generated/constants.ts';
import type {
  ProviderWithDefaults,
  ServerRole,
  SwitchboardConfigWithDefaults,
  TrustMode,
} from '../../generated/types.ts';
import { validateSwitchboardConfig } from '../../generated/validators.js';
import { AppError } from '../errors/app-error.ts';
import { schemaErrorLines } from '../errors/schema-errors.ts';
import { providerCredentials, presetOptionProblem, signsUrl, usesUrl } from '../verify/preset-options.ts';
import { presetFor } from '../verify/preset-registry.ts';
import type { Preset } from '../verify/preset-types.ts';
import { camelCased, type CamelCased } from './camel-keys.ts';
import { configHint } from './config-hints.ts';
import { ConfigError } from './config-error.ts';
import { resolveForwardRules, type ForwardRuleConfig } from './forward-rules.ts';
import { resolveReply, type ReplyConfig } from './reply-config.ts';
import { API_PREFIX, HOOKS_PREFIX, isUnder, MCP_PATH } from '../shared/route-prefixes.ts';

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
  /**
   * What the check compares against, empty strings dropped (empty means "missing"): secrets,
   * tokens or `username:password` pairs (verify/preset-options.ts).
   */
  secrets: string[];
  /** Public keys (`public_key`), apart from the secrets: only ever used to check a signature. */
  publicKeys: string[];
  /** The URL the provider calls, for presets that sign it (public_url, or server.public_url + route). */
  publicUrl?: string;
  /** meta: the verify token its GET handshake must carry. */
  verifyToken?: string;
  /** Token providers: the variable of a `token: ${VAR}` in the file (its name; load-config.ts sets it). */
  tokenVariable?: string;
  toleranceSeconds: number;
  maxBodyBytes: number;
  recordRejected: boolean;
  /** Most bytes of a rejected delivery's body that are stored. */
  recordRejectedMaxBytes: number;
  resignOnReplay: boolean;
  /** generic-hmac only: how it signs, as configured (GET /api/providers/{name} shows it; never a secret). */
  hmac?: NonNullable<ProviderWithDefaults['hmac']>;
  /** The provider waits for the app's answer (config: reply), checked against the forward rules. */
  reply?: ReplyConfig;
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

/**
 * The config's sections that hold only the schema's own keys, as the code reads them: the same
 * keys camelCased (camel-keys.ts), defaults filled in. A key added to one of them in the schema
 * arrives here by itself. providers and forward are maps of the user's names, resolved below;
 * retention is handed to the store's retention job as written.
 */
type SchemaSections = CamelCased<Omit<SwitchboardConfigWithDefaults, 'providers' | 'forward' | 'retention'>>;

export type BucketConfig = SchemaSections['rateLimits']['read'];

export interface ResolvedConfig extends Omit<SchemaSections, 'replay' | 'outbound'> {
  providers: ProviderConfig[];
  /** replay's own keys: its old `allow` is read into outbound. */
  replay: Omit<SchemaSections['replay'], 'allow'>;
  /**
   * Where replay and forwarding may send. `allowFrom` says which key the list came from:
   * replay.allow is its old name, read still, and start-up warns about it.
   */
  outbound: SchemaSections['outbound'] & { allowFrom: 'outbound.allow' | 'replay.allow' };
  /** forward: rules, in the config's order; targets are checked at start-up. */
  forward: ForwardRuleConfig[];
  /** Passed as written (defaults filled in) to the store's retention job, which owns its rules. */
  retention: SwitchboardConfigWithDefaults['retention'];
}

/**
 * A value the schema gives a default only under a condition (the queue-only keys, and family
 * itself, depend on the provider's family): validation filled it, but its type cannot say so.
 */
function filled<T>(value: T | undefined, at: string): T {
  if (value === undefined) throw new Error(`${at}: config validation left no value; the schema lost its default`);
  return value;
}

function buildPreset(at: string, options: Parameters<typeof presetFor>[0]): Preset {
  try {
    return presetFor(options);
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(`${at}.${err.message}`);
    throw err;
  }
}

/** The URL a provider calls: its own public_url, else server.public_url plus its route. */
function publicUrlOf(p: ProviderWithDefaults, route: string, serverUrl: string | undefined): string | undefined {
  if (p.public_url !== undefined) return p.public_url;
  return serverUrl === undefined ? undefined : `${serverUrl.replace(/\/+$/, '')}${route}`;
}

/** A queue provider: its channel and mode, with the family's defaults the schema filled in. */
function resolveQueueProvider(at: string, base: ProviderBase, p: ProviderWithDefaults): QueueProviderConfig {
  if (p.trust_mode !== undefined && p.trust_mode !== 'queue') {
    throw new ConfigError(`${at}.trust_mode: a queue provider's trust_mode is queue`);
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

/** The preset a webhook provider names, or the one its trust_mode implies (token and open have one each). */
function webhookPresetName(at: string, p: ProviderWithDefaults): PresetName {
  // Keys of the other family are refused by the schema (config.schema.json, provider if/then/else).
  if (p.trust_mode === 'queue') throw new ConfigError(`${at}.trust_mode: queue needs family: queue`);
  if (p.preset === undefined && p.trust_mode === undefined) {
    throw new ConfigError(`${at}: set a preset (github, stripe, …) or trust_mode (token or open)`);
  }
  if (p.preset === undefined && p.trust_mode === 'signed') {
    throw new ConfigError(`${at}.preset: a signed provider needs a preset that says how it is signed`);
  }
  // Without a preset, trust_mode is token or open here, and each has a preset of the same name.
  return p.preset ?? (p.trust_mode === 'token' ? 'token' : 'open');
}

/** Each secret and public key checked by the preset, the error naming the key that holds the bad value. */
function checkedCredentials(
  at: string,
  preset: Preset,
  p: ProviderWithDefaults,
): ReturnType<typeof providerCredentials> {
  const { secrets, publicKeys } = providerCredentials(p);
  const secretKey = p.password !== undefined ? 'password' : p.token !== undefined ? 'token' : 'secret';
  for (const value of secrets) {
    const wrong = preset.checkCredential?.(value) ?? null;
    if (wrong !== null) throw new ConfigError(`${at}.${secretKey}: ${wrong}`);
  }
  for (const value of publicKeys) {
    // Every preset that takes public_key checks it (presetOptionProblem refuses it elsewhere).
    const wrong =
      preset.checkPublicKey === undefined ? 'this preset takes no public key' : preset.checkPublicKey(value);
    if (wrong !== null) throw new ConfigError(`${at}.public_key: ${wrong}`);
  }
  return { secrets, publicKeys };
}

/** A webhook provider: its preset built once, its route, URL and credentials checked against it. */
function resolveWebhookProvider(
  at: string,
  base: ProviderBase,
  p: ProviderWithDefaults,
  serverUrl: string | undefined,
): WebhookProviderConfig {
  const presetName = webhookPresetName(at, p);
  const problem = presetOptionProblem(presetName, p);
  if (problem !== null) throw new ConfigError(`${at}.${problem.key}: ${problem.message}`);
  const route = p.route ?? `${HOOKS_PREFIX}/${base.name}`;
  const publicUrl = usesUrl(presetName) ? publicUrlOf(p, route, serverUrl) : undefined;
  if (signsUrl(presetName) && publicUrl === undefined) {
    throw new ConfigError(
      `${at}.public_url: provider ${base.name} (preset ${presetName}) signs the URL it calls; set public_url or server.public_url`,
    );
  }
  const preset = buildPreset(at, {
    preset: presetName,
    token_header: p.token_header,
    hmac: p.hmac,
    event_type_from: p.event_type_from,
    external_id_from: p.external_id_from,
    public_url: publicUrl,
    // Which credentials are given decides the credential kind: Standard Webhooks with whpk_ keys
    // only is asymmetric (it checks v1a and cannot sign).
    ...(p.secret === undefined ? {} : { secret: p.secret }),
    ...(p.public_key === undefined ? {} : { public_key: p.public_key }),
  });
  const trustMode = preset.trustMode;
  if (p.trust_mode !== undefined && p.trust_mode !== trustMode) {
    throw new ConfigError(`${at}.trust_mode: preset ${presetName} is ${trustMode}, not ${p.trust_mode}`);
  }
  return {
    ...base,
    family: 'webhook',
    presetName,
    preset,
    trustMode,
    route,
    ...checkedCredentials(at, preset, p),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(p.verify_token === undefined ? {} : { verifyToken: p.verify_token }),
    toleranceSeconds: p.tolerance_seconds,
    maxBodyBytes: p.max_body_bytes,
    recordRejected: p.record_rejected,
    recordRejectedMaxBytes: p.record_rejected_max_bytes,
    resignOnReplay: p.replay.resign,
    ...(p.hmac === undefined ? {} : { hmac: p.hmac }),
  };
}

/** One provider, by its family: the keys they share, then the family's own. */
function resolveProvider(name: string, p: ProviderWithDefaults, serverUrl: string | undefined): ProviderConfig {
  const at = `providers.${name}`;
  const base: ProviderBase = {
    name,
    enabled: p.enabled,
    eventTypeFrom: p.event_type_from,
    externalIdFrom: p.external_id_from,
  };
  return filled(p.family, `${at}.family`) === 'queue'
    ? resolveQueueProvider(at, base, p)
    : resolveWebhookProvider(at, base, p, serverUrl);
}

/** Checks a config against the schema and fills in the schema's defaults, on a copy. */
function validated(config: unknown): SwitchboardConfigWithDefaults {
  const copy: unknown = structuredClone(config);
  if (!validateSwitchboardConfig(copy)) {
    throw new ConfigError(
      `invalid config:\n  ${schemaErrorLines(validateSwitchboardConfig.errors, '(root)', configHint(config)).join('\n  ')}`,
    );
  }
  return copy;
}

/**
 * outbound.allow, or replay.allow under its old name. Whether the operator set a key is read from
 * the file as written: validation fills outbound.allow's default in, and an empty list set on
 * purpose must still count as set. Both set is refused: two lists for one thing would leave it to
 * the reader to guess which one holds.
 */
function outboundAllow(raw: unknown, config: SwitchboardConfigWithDefaults): ResolvedConfig['outbound'] {
  const written = (section: string): boolean => {
    const value = (raw as Record<string, unknown>)[section];
    return typeof value === 'object' && value !== null && 'allow' in value;
  };
  const aliased = config.replay.allow;
  if (aliased === undefined) return { allow: config.outbound.allow, allowFrom: 'outbound.allow' };
  if (written('outbound')) {
    throw new ConfigError('replay.allow: the old name of outbound.allow; set outbound.allow only, not both');
  }
  return { allow: aliased, allowFrom: 'replay.allow' };
}

/** A webhook provider with its reply checked against the forward rules (the schema refuses it on a queue provider). */
function withReply(
  provider: ProviderConfig,
  reply: ProviderWithDefaults['reply'],
  rules: readonly ForwardRuleConfig[],
  role: ServerRole,
): ProviderConfig {
  if (reply === undefined || provider.family !== 'webhook') return provider;
  return { ...provider, reply: resolveReply(provider.name, provider.presetName, reply, rules, role) };
}

/**
 * The config as the server uses it: validated against the schema (which supplies every default),
 * then the rules a schema cannot express (preset and trust_mode agreeing, unique routes), each
 * provider's preset built once.
 */
export function resolveConfig(raw: unknown): ResolvedConfig {
  const config = validated(raw);
  const providers = Object.entries(config.providers ?? {}).flatMap(([name, p]) =>
    p === undefined ? [] : [resolveProvider(name, p, config.server.public_url)],
  );
  const routes = new Map<string, string>();
  for (const p of providers) {
    if (p.family !== 'webhook') continue;
    if (isUnder(p.route, MCP_PATH) || isUnder(p.route, API_PREFIX)) {
      throw new ConfigError(`providers.${p.name}.route: ${p.route} is reserved for switchboard itself`);
    }
    const clash = routes.get(p.route);
    if (clash !== undefined) throw new ConfigError(`providers.${p.name}.route: ${p.route} is already used by ${clash}`);
    routes.set(p.route, p.name);
  }
  const { providers: configured, forward, retention, ...sections } = config;
  const { allow: _alias, ...replay } = camelCased(sections.replay);
  const rules = resolveForwardRules(
    forward,
    providers.map((p) => p.name),
  );
  return {
    ...camelCased(sections),
    providers: providers.map((p) => withReply(p, configured?.[p.name]?.reply, rules, config.server.role)),
    replay,
    outbound: outboundAllow(raw, config),
    forward: rules,
    retention,
  };
}
