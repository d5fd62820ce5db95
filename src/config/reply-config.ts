/**
 * A provider's `reply` as the server uses it: the config's keys with the preset's reply data from
 * the catalog (which deliveries wait, the deadline, the default wait and fallback), checked
 * against the forward rules, since the answer comes from one of them.
 */
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { PresetName } from '../../generated/constants.ts';
import type { ProviderCatalogEntry, ReplyWithDefaults } from '../../generated/types.ts';
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

export interface ReplyConfig {
  /** The forward rule whose target answers; its delivery of the event is the reply attempt. */
  rule: string;
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
 * The provider's reply config, checked: its preset waits for answers, the rule exists, takes this
 * provider's events and sends them one at a time in any order, and the wait ends before the
 * provider's deadline. Each error names the key at fault.
 */
export function resolveReply(
  provider: string,
  preset: PresetName,
  reply: ReplyWithDefaults,
  rules: readonly ForwardRuleConfig[],
): ReplyConfig {
  const at = `providers.${provider}.reply`;
  const data = catalogReply(preset);
  if (data === undefined) {
    throw new ConfigError(`${at}: preset ${preset} never waits for an answer; remove reply`);
  }
  // `listen` is reserved for `switchboard listen --reply`, which is not built yet: refused by name
  // rather than taken for a rule of that name, so the config means the same once it is.
  if (reply.from === LISTEN) {
    throw new ConfigError(`${at}.from: listen (switchboard listen --reply) is not available yet; name a forward rule`);
  }
  const rule = rules.find((r) => r.name === reply.from);
  if (rule === undefined) {
    const hint = didYouMean(
      reply.from,
      rules.map((r) => r.name),
    );
    throw new ConfigError(`${at}.from: no forward rule named ${reply.from}${hint === '' ? '' : `; ${hint}`}`);
  }
  if (rule.providers !== undefined && !rule.providers.includes(provider)) {
    throw new ConfigError(`${at}.from: forward rule ${rule.name} does not take provider ${provider}'s events`);
  }
  // An ordered rule holds its queue behind its head: a reply sent once, outside the queue, would
  // either wait for the whole backlog or jump it.
  if (rule.ordered)
    throw new ConfigError(`${at}.from: forward rule ${rule.name} is ordered; a reply cannot wait its turn`);
  const timeoutMs = reply.timeout_ms ?? data.timeout_ms;
  if (timeoutMs > data.deadline_ms) {
    throw new ConfigError(
      `${at}.timeout_ms: ${timeoutMs} is over ${preset}'s deadline of ${data.deadline_ms} ms; the provider would give up first`,
    );
  }
  const fallback = reply.fallback ?? data.fallback;
  return {
    rule: rule.name,
    timeoutMs,
    fallback: { status: fallback.status, contentType: fallback.content_type, body: fallback.body },
    retry: reply.retry,
    maxAnswerBytes: reply.max_answer_bytes,
    waits: data.waits,
  };
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
