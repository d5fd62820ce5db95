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
 * Constant-time equality for a digest switchboard computed (an HMAC, a body hash) and a value the
 * sender offered. A digest's length is its algorithm's and encoding's (64 characters for a hex
 * SHA-256), which the scheme makes public, so only a candidate of that length is compared, byte for
 * byte, and any other is refused at once: no secret length can leak. This skips the two SHA-256
 * passes constantTimeEqual needs to hide a secret's length, two OpenSSL calls per signature on
 * every delivery (docs/adr/ingest-minimum-work.md, the server's CPU). Never for a configured token
 * or password: there the expected value's length is itself a secret.
 */
export function digestEqual(expected: string, candidate: string): boolean {
  const bytesA = Buffer.from(expected, 'utf8');
  const bytesB = Buffer.from(candidate, 'utf8');
  return bytesA.length === bytesB.length && timingSafeEqual(bytesA, bytesB);
}

/**
 * Index of the first key whose expected value equals any provided candidate, or -1.
 *
 * Every key is compared with every candidate, with no early exit, so the response time does not
 * reveal which rotated secret (or which of several signatures) matched. Key and candidate lists
 * are tiny (a few secrets, a few signatures), so the full scan costs nothing noticeable. `equal`
 * is constantTimeEqual unless the expected values are digests of a public length (digestEqual).
 */
export function findMatchingKey<K>(
  keys: readonly K[],
  candidates: readonly string[],
  expectedFor: (key: K) => string,
  equal: (expected: string, candidate: string) => boolean = constantTimeEqual,
): number {
  let matched = -1;
  keys.forEach((key, index) => {
    const expected = expectedFor(key);
    for (const candidate of candidates) {
      const same = equal(expected, candidate);
      if (same && matched === -1) matched = index;
    }
  });
  return matched;
}
