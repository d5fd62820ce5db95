/**
 * A forward rule's `to` is checked when the server starts, with the replay target policy: a bad
 * URL, an address outside loopback and replay.allow, or switchboard itself stops the start-up with
 * a config error (exit code 2) that names the rule and the reason.
 */
import type { Logger } from 'pino';
import { ConfigError } from '../config/config-error.ts';
import type { ForwardRuleConfig } from '../config/forward-rules.ts';
import { AppError } from '../errors/app-error.ts';
import {
  checkReplayTarget,
  parseReplayTarget,
  wouldLoopBack,
  type Resolver,
  type SelfAddress,
  type TargetPolicy,
} from '../outbound/target-policy/index.ts';

export interface CheckForwardTargetsOptions {
  policy: TargetPolicy;
  /** switchboard's listening addresses (known once it listens). */
  selfAddresses: readonly SelfAddress[];
  /** The webhook routes it serves. */
  webhookRoutes: readonly string[];
  logger: Logger;
  resolver?: Resolver;
}

const reasonOf = (error: AppError): string => error.message.replace(/^replay target refused: /, '');

export async function checkForwardTargets(
  rules: readonly ForwardRuleConfig[],
  options: CheckForwardTargetsOptions,
): Promise<Map<string, URL>> {
  const targets = new Map<string, URL>();
  for (const rule of rules) {
    const at = `forward.${rule.name}.to`;
    let url: URL;
    try {
      url = parseReplayTarget(rule.to, undefined);
      const checked = await checkReplayTarget(url, {
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
      if (error instanceof ConfigError) throw error;
      if (error instanceof AppError && error.code === 'invalid_argument') {
        throw new ConfigError(`${at}: refused: ${reasonOf(error)}`);
      }
      if (error instanceof AppError) {
        // A name that does not resolve now may resolve later; each attempt checks again.
        options.logger.warn({ rule: rule.name, reason: error.message }, 'forward target could not be checked yet');
        targets.set(rule.name, parseReplayTarget(rule.to, undefined));
        continue;
      }
      throw error;
    }
    targets.set(rule.name, url);
  }
  return targets;
}
