/**
 * The forward rule the forwarding and roles files run: signed GitHub deliveries forwarded to a
 * loopback consumer, with short timeouts so a killed process's work comes back within seconds.
 */
import { SCHEMAS } from '../../../generated/schemas.ts';
import type { Consumer, RecordedRequest } from '../../support/local-server.ts';

/** A killed instance's claims come back after 2 s instead of the default 30 s. */
export const CLAIM_TIMEOUT_MS = 2_000;

/**
 * For the tests that check "exactly once when nothing fails": a lease lapses when its holder's
 * event loop stalls past the claim timeout, and on a loaded CI machine a 2 s timeout did (14
 * events sent twice at load 14). A lapsed lease is at-least-once working as designed, not what
 * those tests are about, so they give the leases the default's room.
 */
export const UNHURRIED_CLAIM_TIMEOUT_MS =
  SCHEMAS.SwitchboardConfig.$defs.forwardRule.properties.claim_timeout_ms.default;

export function forwardingConfig(
  consumer: Consumer,
  secret: string,
  claimTimeoutMs = CLAIM_TIMEOUT_MS,
): Record<string, unknown> {
  return {
    providers: { github: { preset: 'github', secret } },
    forward: {
      'local-app': {
        to: consumer.url('/webhooks'),
        concurrency: 8,
        timeout_ms: 1_000,
        claim_timeout_ms: claimTimeoutMs,
        backoff: { initial_ms: 100, max_ms: 500 },
      },
    },
    rate_limits: { read: { capacity: 100_000, refill_per_second: 100_000 } },
  };
}

/** The stored event a forwarded request carries. */
export const eventIdOf = (req: RecordedRequest): string => String(req.headers['x-switchboard-replay'] ?? '');
