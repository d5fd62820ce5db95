/**
 * A provider's `reply` as the server uses it: the config's keys with the preset's reply data from
 * the catalog (which deliveries wait, the deadline, the default wait and fallback), checked
 * against the forward rules, since the answer comes from one of them.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry, ReplyWithDefaults, ServerRole } from '../../generated/types.ts';
import { didYouMean } from '../shared/did-you-mean.ts';
import { ConfigError } from './config-error.ts';
import type { ForwardRuleConfig } from './forward-rules.ts';

/** The reply source reserved for `switchboard listen --reply`. */
const LISTEN = 'listen';

/** The catalog's reply data of one preset (schemas/provider-catalog-entry.schema.json, reply). */
type CatalogReply = NonNullable<ProviderCatalogEntry['reply']>;

/** What the provider is answered when the app's answer does not come, or cannot be used. */
export interface ReplyFallback {
  status: number;
  contentType: string;
  body: string;
}

/**
 * Where the answer comes from: a forward rule's target (its delivery of the event is the reply
 * attempt), or the app behind a connected `switchboard listen --reply`.
 */
type ReplySource = { kind: 'rule'; rule: string } | { kind: 'listen' };

export interface ReplyConfig {
  source: ReplySource;
  timeoutMs: number;
  fallback: ReplyFallback;
  /** The outbox may retry a failed reply attempt (the provider has had the fallback by then). */
  retry: boolean;
  maxAnswerBytes: number;
  /** Which deliveries wait, from the catalog. */
  waits: CatalogReply['waits'];
}

/** The catalog's reply data of a preset, or undefined when the provider never waits for an answer. */
function catalogReply(preset: PresetName): CatalogReply | undefined {
  return PROVIDER_CATALOG[preset].reply;
}

/**
 * The provider's reply config, checked: its preset waits for answers, its source can answer
 * (replySource), and the wait ends before the provider's deadline. Each error names the key at fault.
 */
export function resolveReply(
  provider: string,
  preset: PresetName,
  reply: ReplyWithDefaults,
  rules: readonly ForwardRuleConfig[],
  role: ServerRole,
): ReplyConfig {
  const at = `providers.${provider}.reply`;
  const data = catalogReply(preset);
  if (data === undefined) {
    throw new ConfigError(`${at}: preset ${preset} never waits for an answer; remove reply`);
  }
  const source = replySource(at, provider, reply.from, rules, role);
  const timeoutMs = reply.timeout_ms ?? data.timeout_ms;
  if (timeoutMs > data.deadline_ms) {
    throw new ConfigError(
      `${at}.timeout_ms: ${timeoutMs} is over ${preset}'s deadline of ${data.deadline_ms} ms; the provider would give up first`,
    );
  }
  const fallback = reply.fallback ?? data.fallback;
  return {
    source,
    timeoutMs,
    fallback: { status: fallback.status, contentType: fallback.content_type, body: fallback.body },
    retry: reply.retry,
    maxAnswerBytes: reply.max_answer_bytes,
    waits: data.waits,
  };
}

/**
 * The reply's source, checked: `listen` needs the stream listen follows, which a worker-only
 * instance does not serve; a rule must exist, take this provider's events and send them one at a
 * time in any order.
 */
function replySource(
  at: string,
  provider: string,
  from: string,
  rules: readonly ForwardRuleConfig[],
  role: ServerRole,
): ReplySource {
  if (from === LISTEN) {
    if (role === 'worker') {
      throw new ConfigError(
        `${at}.from: listen needs the event stream switchboard listen --reply follows, and server.role worker serves none; run this provider on an ingest (or all) instance`,
      );
    }
    return { kind: 'listen' };
  }
  const rule = rules.find((r) => r.name === from);
  if (rule === undefined) {
    const hint = didYouMean(
      from,
      rules.map((r) => r.name),
    );
    throw new ConfigError(`${at}.from: no forward rule named ${from}${hint === '' ? '' : `; ${hint}`}`);
  }
  if (rule.providers !== undefined && !rule.providers.includes(provider)) {
    throw new ConfigError(`${at}.from: forward rule ${rule.name} does not take provider ${provider}'s events`);
  }
  // An ordered rule holds its queue behind its head: a reply sent once, outside the queue, would
  // either wait for the whole backlog or jump it.
  if (rule.ordered)
    throw new ConfigError(`${at}.from: forward rule ${rule.name} is ordered; a reply cannot wait its turn`);
  return { kind: 'rule', rule: rule.name };
}

/**
 * Past the longest reply wait, a settle too slow to be still running: after this long from its
 * event's arrival, a reply attempt still `delivering` was interrupted by a stop.
 */
const SETTLE_MARGIN_MS = 5_000;

/**
 * How old a reply attempt without a lease must be to count as interrupted at start-up: the longest
 * wait this config gives a provider (the catalog's longest deadline when none waits, for rows an
 * earlier config left), plus a margin for the settle.
 */
export function interruptedReplyAfterMs(replies: ReadonlyArray<ReplyConfig | undefined>): number {
  const waits = replies.flatMap((reply) => (reply === undefined ? [] : [reply.timeoutMs]));
  const deadlines = Object.values(PROVIDER_CATALOG).flatMap((entry) =>
    entry.reply === undefined ? [] : [entry.reply.deadline_ms],
  );
  return Math.max(...(waits.length > 0 ? waits : deadlines)) + SETTLE_MARGIN_MS;
}
