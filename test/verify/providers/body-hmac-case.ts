/**
 * The providers that sign the body alone: an HMAC of the raw body with the shared secret, written
 * into one header (hex or base64, some behind a prefix), no timestamp. Each such provider's case
 * (catalog/<preset>/<preset>.case.ts) is one call here, written as its documentation describes the
 * scheme; the signature is computed here, independently of src/, and checked by the provider's own
 * package where it publishes a verifier (coinbase-commerce-node, gocardless-nodejs, razorpay),
 * otherwise by the documented comparison.
 */
import type { PresetName } from '../../../generated/constants.ts';
import { hmac, jsonDelivery, type ProviderCase, sharedSecret } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

type Algorithm = 'sha1' | 'sha256';
type Encoding = 'hex' | 'base64';
/** How the header's value is written: a prefix, then the digest, e.g. `sha256=<hex sha256>`. */
type Written = `${string}<${Encoding} ${Algorithm}>`;

export interface BodyHmacProvider {
  preset: PresetName;
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string;
  /** The signature's header, as the provider's documentation spells it. */
  header: string;
  written: Written;
  eventType: string;
  /** Headers besides the signature that the provider sends: event names, delivery ids (fresh each time). */
  otherHeaders?: (atMs: number) => Record<string, string>;
  /** The provider's own verifier, where it publishes one: does it accept this signature of this body? */
  verifier?: (body: Buffer, signature: string, secret: string) => boolean;
}

export function bodyHmacCase(provider: BodyHmacProvider): ProviderCase {
  const { preset, sample, header, written, eventType, otherHeaders, verifier } = provider;
  const [prefix = '', digest = ''] = written.split('<');
  const [encoding, algorithm] = digest.replace('>', '').split(' ') as [Encoding, Algorithm];
  const name = header.toLowerCase();
  const sign = (body: Buffer, secret: string): string => `${prefix}${hmac(algorithm, secret, [body], encoding)}`;
  return {
    preset,
    ...sharedSecret(`${preset}-signing-secret`),
    deliver(secret, atMs) {
      const body = samplePayload(preset, `${sample}.json`);
      return jsonDelivery(body, { ...otherHeaders?.(atMs), [name]: sign(body, secret) });
    },
    accepts({ body, headers }, secret) {
      const sent = headers[name] ?? '';
      return verifier === undefined ? sent === sign(body, secret) : verifier(body, sent, secret);
    },
    timestamped: false,
    requiredHeader: header,
    eventType,
    proof: verifier === undefined ? 'example' : 'package-verifies',
  };
}
