import { hash, timingSafeEqual } from 'node:crypto';

/**
 * Constant-time equality for secrets and signatures.
 *
 * crypto.timingSafeEqual throws on inputs of different lengths, and checking the lengths first
 * would return early and tell an attacker how long the expected value is. Both sides are hashed to
 * a fixed 32 bytes first, so the comparison always runs on equal-length buffers and a length
 * difference costs the same as any other mismatch. The trailing length check cannot leak anything
 * the digests have not already decided; it only guards the (theoretical) hash collision.
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const bytesA = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
  const bytesB = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  // One-shot hashing: a Hash object per side cost more than the hashing itself (every delivery
  // compares at least one signature).
  const same = timingSafeEqual(hash('sha256', bytesA, 'buffer'), hash('sha256', bytesB, 'buffer'));
  return same && bytesA.length === bytesB.length;
}

/**
 * Index of the first key whose expected value equals any provided candidate, or -1.
 *
 * Every key is compared with every candidate, with no early exit, so the response time does not
 * reveal which rotated secret (or which of several signatures) matched. Key and candidate lists
 * are tiny (a few secrets, a few signatures), so the full scan costs nothing noticeable.
 */
export function findMatchingKey<K>(
  keys: readonly K[],
  candidates: readonly string[],
  expectedFor: (key: K) => string,
): number {
  let matched = -1;
  keys.forEach((key, index) => {
    const expected = expectedFor(key);
    for (const candidate of candidates) {
      const equal = constantTimeEqual(expected, candidate);
      if (equal && matched === -1) matched = index;
    }
  });
  return matched;
}
