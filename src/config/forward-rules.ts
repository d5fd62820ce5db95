/**
 * The forward: rules as the server uses them, and which of them take an event. The target's
 * policy check needs DNS and the server's own address, so it runs at start-up (forward/), not here.
 */
import type { ForwardRuleWithDefaults, TrustMode } from '../../generated/types.ts';
import { camelCased, type CamelCased } from './camel-keys.ts';
import { ConfigError } from './config-error.ts';

/**
 * A rule as the server uses it: the schema's keys camelCased (camel-keys.ts), defaults filled in,
 * and its name. Without providers or event_types a rule takes every provider or type.
 */
export type ForwardRuleConfig = CamelCased<ForwardRuleWithDefaults> & { name: string };

/** What the outbox looks at in an event to pick its rules. */
export interface ForwardCandidate {
  provider: string;
  eventType: string;
  trustMode: TrustMode;
  verified: boolean;
  passedCheck?: boolean | null;
  /** A registration handshake: no rule takes it (null: a stored event from before it was recorded). */
  handshake?: boolean | null;
}

export function resolveForwardRules(
  forward: Readonly<Record<string, ForwardRuleWithDefaults | undefined>>,
  providerNames: readonly string[],
): ForwardRuleConfig[] {
  return Object.entries(forward).flatMap(([name, rule]) => {
    if (rule === undefined) return [];
    const at = `forward.${name}`;
    for (const provider of rule.providers ?? []) {
      if (!providerNames.includes(provider)) {
        throw new ConfigError(`${at}.providers: no provider named ${provider} is configured`);
      }
    }
    if (rule.backoff.initial_ms > rule.backoff.max_ms) {
      throw new ConfigError(
        `${at}.backoff: initial_ms (${rule.backoff.initial_ms}) is above max_ms (${rule.backoff.max_ms})`,
      );
    }
    if (rule.claim_timeout_ms <= rule.timeout_ms) {
      throw new ConfigError(
        `${at}.claim_timeout_ms: ${rule.claim_timeout_ms} must be above timeout_ms (${rule.timeout_ms}), or a slow attempt would be claimed twice`,
      );
    }
    return [{ ...camelCased(rule), name }];
  });
}

/**
 * True when the event failed a signature or token check on arrival. A signed event's outcome is
 * its verified flag; a token event without a recorded outcome never passed. Open and queue events
 * have nothing to fail.
 */
export function failedItsCheck(event: ForwardCandidate): boolean {
  if (event.trustMode === 'signed') return !(event.passedCheck ?? event.verified);
  if (event.trustMode === 'token') return event.passedCheck !== true;
  return false;
}

/** list_webhook_events' event_type match: without a dot, the family too (invoice takes invoice.paid). */
function typeMatches(filter: string, eventType: string): boolean {
  return filter.includes('.') ? eventType === filter : eventType.split('.')[0] === filter;
}

export function ruleTakes(rule: ForwardRuleConfig, event: ForwardCandidate): boolean {
  if (event.handshake === true) return false;
  if (rule.providers !== undefined && !rule.providers.includes(event.provider)) return false;
  if (rule.eventTypes !== undefined && !rule.eventTypes.some((t) => typeMatches(t, event.eventType))) return false;
  return rule.includeUnverified || !failedItsCheck(event);
}

/**
 * The outbox's question for the store: which rules take this event. Undefined without rules, so
 * the store's insert stays exactly what it is when nothing is forwarded.
 */
export function forwardRuleMatcher(
  rules: readonly ForwardRuleConfig[],
): ((event: ForwardCandidate) => readonly string[]) | undefined {
  if (rules.length === 0) return undefined;
  return (event) => rules.filter((rule) => ruleTakes(rule, event)).map((rule) => rule.name);
}
