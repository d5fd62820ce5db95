import { createHmac } from 'node:crypto';
import type { DigestEncoding, HmacAlgorithm } from '../../generated/constants.ts';
import { digestEqual, findMatchingKey } from './timing-safe.ts';
import type { VerifyOutcome } from './preset-types.ts';
import { rotationNote, signatureMismatch } from './verdicts.ts';

/**
 * HMAC over the concatenation of parts. Text parts are UTF-8 encoded and Buffer parts are used
 * byte for byte, so a body is never decoded to a string on the way in: decoding would replace
 * invalid UTF-8 and break the signature of any non-text payload.
 */
function hmac(algorithm: HmacAlgorithm, key: string | Buffer, parts: readonly (string | Buffer)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

export function hmacEncoded(
  algorithm: HmacAlgorithm,
  key: string | Buffer,
  parts: readonly (string | Buffer)[],
  encoding: DigestEncoding,
): string {
  return hmac(algorithm, key, parts).toString(encoding);
}

/**
 * An empty string in the secret list would key an HMAC with nothing (or, for tokens, match an
 * empty header), so it is dropped rather than treated as a real secret.
 */
export function usableSecrets(secrets: readonly string[]): string[] {
  return secrets.filter((secret) => secret.length > 0);
}

interface SignatureCheck<K> {
  algorithm: HmacAlgorithm;
  /** Display name of the header the signature came from, for the detail line. */
  header: string;
  keys: readonly K[];
  /** Signatures offered by the sender, already stripped of any prefix and normalised. */
  candidates: readonly string[];
  expectedFor: (key: K) => string;
}

/**
 * The verdict for an HMAC comparison. The detail names the algorithm and header, and on success
 * which secret of several matched (so an operator can tell when the old secret stops being used),
 * but never the secret or any signature value.
 */
function compareSignatures<K>(check: SignatureCheck<K>): VerifyOutcome {
  const index = findMatchingKey(check.keys, check.candidates, check.expectedFor, digestEqual);
  if (index === -1) return signatureMismatch(check.header);
  const rotation = rotationNote('secret', index, check.keys.length);
  return { ok: true, detail: `hmac-${check.algorithm} valid (${check.header})${rotation}` };
}

/** HMAC-SHA256 of `parts` under each key, against the digests the sender offered. */
export function compareSha256<K extends string | Buffer>(
  header: string,
  keys: readonly K[],
  candidates: readonly string[],
  parts: readonly (string | Buffer)[],
  encoding: DigestEncoding,
): VerifyOutcome {
  return compareSignatures({
    algorithm: 'sha256',
    header,
    keys,
    candidates,
    expectedFor: (key) => hmacEncoded('sha256', key, parts, encoding),
  });
}
