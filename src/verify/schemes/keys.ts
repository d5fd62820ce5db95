/**
 * Keys and timestamps as providers write them: a configured secret becomes the HMAC key the way
 * the provider's library makes it, and a timestamp is read only in the provider's exact format
 * (a timestamp that parses loosely is a timestamp an attacker can shape).
 */
import type { HmacScheme } from '../../../generated/types.ts';
import { parseUnixSeconds } from '../timestamp.ts';

export type KeyEncoding = NonNullable<HmacScheme['key']>;
export type TimestampFormat = NonNullable<HmacScheme['timestamp']>['format'];

/** The key bytes, or null when the secret is not valid in that encoding (it then matches nothing). */
export function decodeKey(secret: string, encoding: KeyEncoding): Buffer | null {
  if (secret === '') return null;
  if (encoding === 'utf8') return Buffer.from(secret, 'utf8');
  if (encoding === 'hex') return /^(?:[0-9a-fA-F]{2})+$/.test(secret) ? Buffer.from(secret, 'hex') : null;
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : null;
}

/**
 * A preset's configured credentials, decoded once: a provider's secrets and public keys are the
 * same on every delivery, so each text is decoded (base64 or hex bytes, a KeyObject) the first
 * time it is seen and kept, and verify and sign share what was made. Held only in memory, beside
 * the configured text it comes from. Past a handful of texts (a caller passing ever new ones) it
 * starts over, so it never grows unbounded.
 */
export class DecodedKeys<K> {
  static readonly MAX_KEPT = 16;
  readonly #decode: (text: string) => K | null;
  readonly #kept = new Map<string, K | null>();

  constructor(decode: (text: string) => K | null) {
    this.#decode = decode;
  }

  /** The key a text decodes to, or null when it is not one (it then matches nothing). */
  get(text: string): K | null {
    const kept = this.#kept.get(text);
    if (kept !== undefined || this.#kept.has(text)) return kept ?? null;
    const key = this.#decode(text);
    if (this.#kept.size >= DecodedKeys.MAX_KEPT) this.#kept.clear();
    this.#kept.set(text, key);
    return key;
  }

  /** The keys of these texts that decode, in order: a rotation note counts among these. */
  usable(texts: readonly string[]): K[] {
    return texts.map((text) => this.get(text)).filter((key): key is K => key !== null);
  }
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})$/i;

export function parseTimestampMs(value: string, format: TimestampFormat): number | null {
  const text = value.trim();
  if (format === 'unix') {
    const seconds = parseUnixSeconds(text);
    return seconds === null ? null : seconds * 1000;
  }
  if (format === 'unix_ms') return /^\d{1,15}$/.test(text) ? Number(text) : null;
  if (!ISO_8601.test(text)) return null;
  // Date.parse reads at most milliseconds; Twitch writes nanoseconds, which it would refuse.
  const ms = Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? null : ms;
}

/** Now in the format; ISO 8601 in whole seconds (as the providers write it) unless `isoMilliseconds`. */
export function formatTimestamp(nowMs: number, format: TimestampFormat, isoMilliseconds = false): string {
  if (format === 'unix') return String(Math.floor(nowMs / 1000));
  if (format === 'unix_ms') return String(Math.floor(nowMs));
  if (isoMilliseconds) return new Date(Math.floor(nowMs)).toISOString();
  return new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
