import { refused } from '../delivery-failure.ts';
import type { TargetPolicy } from './target-policy.ts';

/**
 * Wraps the policy to remember what it decided, so a refused attempt's record can name the
 * address that was refused: the policy's error carries it only inside a sentence.
 */
export function observePolicy(inner: TargetPolicy): {
  policy: TargetPolicy;
  refused: () => string | undefined;
  allowed: () => string | undefined;
} {
  let refusedAddress: string | undefined;
  let allowed: string | undefined;
  const policy: TargetPolicy = {
    check(hostname, address) {
      const verdict = inner.check(hostname, address);
      if (verdict.allowed) allowed ??= verdict.address;
      else refusedAddress ??= verdict.address;
      return verdict;
    },
    assertAllowed(hostname, address) {
      const verdict = policy.check(hostname, address);
      if (!verdict.allowed) throw refused('target_not_allowed', verdict.detail);
      return { address: verdict.address, family: verdict.family };
    },
  };
  return { policy, refused: () => refusedAddress, allowed: () => allowed };
}
