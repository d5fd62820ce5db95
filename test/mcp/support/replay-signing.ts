/**
 * What a replay result says proved the replay, checked against what the consumer received. Any
 * scheme can use it: the asymmetric presets' `original` replays (original signature headers sent
 * as they arrived) take the same check as `resigned` and `unsigned` ones.
 */
import { expect } from 'vitest';
import type { ReplayResult } from '../../../generated/types.ts';
import type { RecordedRequest } from '../../support/local-server.ts';

export interface ExpectedSigning {
  signed: NonNullable<ReplayResult['signed']>;
  /** The signature or token header names the replay must have set, lower-case. */
  headers: readonly string[];
}

/**
 * The result names exactly the headers it set, each of them reached the consumer, and no value of
 * theirs appears anywhere in the result.
 */
export function expectReplaySigned(
  result: ReplayResult,
  received: RecordedRequest | undefined,
  expected: ExpectedSigning,
): void {
  expect(result.signed).toBe(expected.signed);
  expect([...(result.signature_headers ?? [])].sort()).toEqual([...expected.headers].sort());
  const text = JSON.stringify(result);
  for (const name of expected.headers) {
    const value = received?.headers[name];
    expect(value, `${name} reached the consumer`).toBeDefined();
    for (const one of [value ?? []].flat()) expect(text).not.toContain(one);
  }
}
