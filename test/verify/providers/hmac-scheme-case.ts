/**
 * The providers whose HMAC-SHA256 (SHA-1 for Trello) covers more than the body: a timestamp, the
 * URL it called, or both. Each such provider's case (catalog/<preset>/<preset>.case.ts) is one call
 * here with its signer, which writes the headers as the provider's documentation describes them,
 * computed independently of src/. A delivery is checked by the provider's own package where it
 * publishes a verifier (the package only verifies, so the signer is first shown to pass it),
 * otherwise by recomputing the signature from the timestamp the delivery carries, as the
 * documentation says a receiver does.
 */
import type { PresetName } from '../../../generated/constants.ts';
import { hmac, jsonDelivery, type ProviderCase, PUBLIC_URL, sharedSecret, type Signed } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

type Headers = Record<string, string>;

export const hex = (secret: string, ...parts: (string | Buffer)[]): string => hmac('sha256', secret, parts, 'hex');
export const base64 = (secret: string, ...parts: (string | Buffer)[]): string =>
  hmac('sha256', secret, parts, 'base64');
/** A timestamp in milliseconds, as HubSpot and WorkOS write it. */
export const msString = (ms: number): string => String(Math.floor(ms));

export interface HmacSchemeProvider {
  preset: PresetName;
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string;
  /** How the timestamp is written (null: none is signed, only the URL). */
  clock: ((ms: number) => string) | null;
  /** The signature's header, as the provider's documentation spells it. */
  header: string;
  eventType: string;
  /** The provider's headers for this body, secret, timestamp and the URL it calls. */
  sign: (body: Buffer, secret: string, at: string, url: string) => Headers;
  /** The provider's own verifier, where its package publishes one. */
  verifier?: (delivery: Signed, secret: string, url: string) => Promise<boolean> | boolean;
  /** Where a receiver without a package reads the signed timestamp back (none where only the URL is signed). */
  signedAt?: (headers: Headers) => string;
  /** The provider signs the URL it calls, so the case is configured with that URL. */
  signsUrl?: true;
}

export function hmacSchemeCase(provider: HmacSchemeProvider): ProviderCase {
  const { preset, sample, clock, header, eventType, sign, verifier, signedAt = () => '' } = provider;
  const url = `${PUBLIC_URL}${preset}`;
  const name = header.toLowerCase();
  return {
    preset,
    ...(provider.signsUrl === true ? { config: { public_url: url } } : {}),
    ...sharedSecret(`${preset}-signing-secret`),
    deliver(secret, atMs) {
      const body = samplePayload(preset, `${sample}.json`);
      return jsonDelivery(body, sign(body, secret, clock?.(atMs) ?? '', url));
    },
    accepts(delivery, secret) {
      if (verifier !== undefined) return verifier(delivery, secret, url);
      const { body, headers } = delivery;
      return headers[name] === sign(body, secret, signedAt(headers), url)[name];
    },
    timestamped: clock !== null,
    requiredHeader: header,
    eventType,
    proof: verifier === undefined ? 'example' : 'package-verifies',
  };
}
