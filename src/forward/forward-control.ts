/**
 * What the HTTP API asks of forwarding: each rule's health, an event's deliveries, manual retries,
 * pause and resume. Pause lives in the database, so every instance and a restart honour it; a
 * retry or resume wakes this instance's dispatcher, and the others find the work at their poll.
 */
import type { ForwardState } from '../../generated/constants.ts';
import type { Delivery, ForwardList, ForwardRetryDeadResult, ForwardRuleStatus } from '../../generated/types.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import { invalidArgument, notFound } from '../errors/app-error.ts';
import { recordedTarget } from '../outbound/send-request.ts';
import type { ListedEvent, RuleHealth } from '../store/outbox/delivery-health.ts';
import type { DeliveryRepository } from '../store/outbox/delivery-repository.ts';

export interface ForwardControl {
  list(): Promise<ForwardList>;
  deliveriesOf(eventId: string): Promise<Delivery[]>;
  retry(deliveryId: string): Promise<Delivery>;
  retryDead(rule: string): Promise<ForwardRetryDeadResult>;
  setPaused(rule: string, paused: boolean): Promise<ForwardRuleStatus>;
  /** Each event of a list page's forwarding, for the list's mark; events no rule took are absent. */
  states(events: readonly ListedEvent[]): Promise<Map<string, ForwardState>>;
}

export interface ForwardControlDeps {
  rules: readonly ForwardRuleConfig[];
  deliveries: DeliveryRepository;
  wake: (rule?: string) => void;
}

export function createForwardControl(deps: ForwardControlDeps): ForwardControl {
  const byName = new Map(deps.rules.map((rule) => [rule.name, rule]));

  const statusOf = (health: RuleHealth): ForwardRuleStatus => ({
    name: health.rule,
    to: recordedTarget(byName.get(health.rule)?.to ?? ''),
    pending: health.pending,
    retrying: health.retrying,
    dead: health.dead,
    delivered_last_hour: health.deliveredLastHour,
    oldest_pending_age: health.oldestPendingAge,
    last_error: health.lastError,
    last_error_at: health.lastErrorAt,
    paused: health.paused,
  });

  const ruleNamed = (name: string): ForwardRuleConfig => {
    const rule = byName.get(name);
    if (rule === undefined) throw notFound(`no forward rule named ${name}`);
    return rule;
  };

  return {
    async list() {
      const health = await deps.deliveries.health([...byName.keys()]);
      return { rules: health.map(statusOf) };
    },

    deliveriesOf: (eventId) => deps.deliveries.forEvent(eventId),

    async retry(deliveryId) {
      const outcome = await deps.deliveries.retry(deliveryId);
      if (outcome.kind === 'not_found') throw notFound(`no delivery with id ${deliveryId}`);
      if (outcome.kind === 'busy') {
        throw invalidArgument(
          outcome.state === 'delivered'
            ? `delivery ${deliveryId} was already delivered; replay the event to send it again`
            : `delivery ${deliveryId} is being delivered right now`,
        );
      }
      deps.wake(outcome.delivery.rule);
      return outcome.delivery;
    },

    async retryDead(name) {
      const rule = ruleNamed(name);
      const retried = await deps.deliveries.retryDead(rule.name);
      deps.wake(rule.name);
      return { rule: rule.name, retried };
    },

    async setPaused(name, paused) {
      const rule = ruleNamed(name);
      await deps.deliveries.setPaused(rule.name, paused);
      if (!paused) deps.wake(rule.name);
      const [health] = await deps.deliveries.health([rule.name]);
      if (health === undefined) throw new Error(`no health for forward rule ${rule.name}`);
      return statusOf(health);
    },

    states: (events) => deps.deliveries.forwardStates(events),
  };
}
