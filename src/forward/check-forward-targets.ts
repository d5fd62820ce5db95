/**
 * A forward rule's `to` is checked when the server starts, with the outbound target policy: a bad
 * URL, an address outside loopback and outbound.allow, or switchboard itself stops the start-up
 * with a config error (exit code 2) that names the rule and the reason.
 */
import type { Logger } from '../log/logger.ts';
import { ConfigError } from '../config/config-error.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import { DeliveryFailure } from '../outbound/delivery-failure.ts';
import { checkTarget, type Resolver } from '../outbound/target-policy/resolve-target.ts';
import { parseTarget } from '../outbound/target-policy/target-url.ts';
import { wouldLoopBack, type SelfAddress } from '../outbound/target-policy/self-loop.ts';
import type { TargetPolicy } from '../outbound/target-policy/target-policy.ts';

export interface CheckForwardTargetsOptions {
  policy: TargetPolicy;
  /** switchboard's listening addresses (known once it listens). */
  selfAddresses: readonly SelfAddress[];
  /** The webhook routes it serves. */
  webhookRoutes: readonly string[];
  logger: Logger;
  resolver?: Resolver;
}

export async function checkForwardTargets(
  rules: readonly ForwardRuleConfig[],
  options: CheckForwardTargetsOptions,
): Promise<Map<string, URL>> {
  const targets = new Map<string, URL>();
  for (const rule of rules) {
    const at = `forward.${rule.name}.to`;
    let url: URL;
    try {
      url = parseTarget(rule.to);
      const checked = await checkTarget(url, {
        policy: options.policy,
        selfAddresses: options.selfAddresses.map((self) => ({
          ...self,
          routes: [...(self.routes ?? []), ...options.webhookRoutes],
        })),
        ...(options.resolver ? { resolver: options.resolver } : {}),
      });
      // Forwarding into any route of switchboard's own (its API, UI, metrics) is refused too, not
      // only into the ingest and MCP routes a replay loop would hit.
      const itself = checked.addresses.some(({ address }) =>
        wouldLoopBack(
          { hostname: checked.hostname, address, port: checked.port, path: url.pathname },
          options.selfAddresses.map((self) => ({ ...self, routes: [url.pathname] })),
        ),
      );
      if (itself) throw new ConfigError(`${at}: ${url.host}${url.pathname} is switchboard itself`);
    } catch (error) {
      if (!(error instanceof DeliveryFailure)) throw error;
      if (error.code === 'refused') throw new ConfigError(`${at}: refused: ${error.detail}`);
      // A name that does not resolve now may resolve later; each attempt checks again.
      options.logger.warn({ rule: rule.name, reason: error.detail }, 'forward target could not be checked yet');
      targets.set(rule.name, parseTarget(rule.to));
      continue;
    }
    targets.set(rule.name, url);
  }
  return targets;
}
