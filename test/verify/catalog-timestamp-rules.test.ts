/**
 * A timestamp an HMAC catalog entry declares is always one the shared engine checks for freshness,
 * and one it signs or carries is always declared. Where the two disagree (a body timestamp the
 * template also signs, a `signature` timestamp with no pairs item to come from, a header timestamp
 * left unsigned, a `t=` item nothing reads), the catalog schema refuses the entry, so codegen stops
 * on it, and the engine refuses to build the scheme from anything else (generic-hmac's options).
 */
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { PresetName } from '../../generated/constants.ts';
import type { HmacScheme } from '../../generated/types.ts';
import { validateProviderCatalogEntry } from '../../generated/validators.js';
import { createHmacScheme } from '../../src/verify/schemes/hmac-scheme.ts';

const PUBLIC_URL = 'https://hooks.example.com/hooks/x';

function hmacOf(name: PresetName): HmacScheme {
  const { scheme } = PROVIDER_CATALOG[name];
  if (scheme.kind !== 'hmac') throw new Error(`${name} is not an HMAC entry`);
  return structuredClone(scheme);
}

const stripe = hmacOf('stripe');
const slack = hmacOf('slack');
const linear = hmacOf('linear');
const github = hmacOf('github');
const { timestamp: _stripeTimestamp, ...stripeUntimed } = stripe;
const { timestamp_key: _t, ...stripePairsWithoutTimestamp } = stripe.signature;

const MISDECLARED: readonly [string, HmacScheme, RegExp][] = [
  [
    'a body timestamp the template also signs',
    { ...linear, signed: '{timestamp}.{body}' },
    /signs \{timestamp\} but takes it from nowhere signed/,
  ],
  [
    'a body timestamp beside a pairs timestamp item',
    {
      ...linear,
      signature: { headers: ['Linear-Signature'], format: 'pairs', signature_key: 'v1', timestamp_key: 't' },
    },
    /has a timestamp_key but does not take its timestamp from the signature/,
  ],
  [
    'a signature timestamp in a plain header, with nowhere to come from',
    { ...stripe, signature: { headers: ['Stripe-Signature'], format: 'plain' } },
    /needs format pairs with a timestamp_key/,
  ],
  [
    'a signature timestamp without a timestamp_key',
    { ...stripe, signature: stripePairsWithoutTimestamp },
    /needs format pairs with a timestamp_key/,
  ],
  [
    'a signature timestamp the template does not sign',
    { ...stripe, signed: '{body}' },
    /takes its timestamp from the signature but does not sign \{timestamp\}/,
  ],
  [
    'a header timestamp the template does not sign',
    { ...slack, signed: 'v0:{body}' },
    /takes its timestamp from a header but does not sign \{timestamp\}/,
  ],
  [
    'a pairs timestamp item with no timestamp declared',
    { ...stripeUntimed, signed: '{body}' },
    /has a timestamp_key but does not take its timestamp from the signature/,
  ],
  [
    '{timestamp} signed with no timestamp declared',
    { ...github, signed: '{timestamp}.{body}' },
    /signs \{timestamp\} but takes it from nowhere signed/,
  ],
];

describe('an HMAC entry’s timestamp: declared exactly when it is signed or carried', () => {
  it('holds for every HMAC entry of the catalog, which the schema accepts and the engine builds', () => {
    let built = 0;
    for (const entry of Object.values(PROVIDER_CATALOG)) {
      const { scheme } = entry;
      if (scheme.kind !== 'hmac') continue;
      expect(validateProviderCatalogEntry(structuredClone(entry)), entry.name).toBe(true);
      expect(() => createHmacScheme(structuredClone(scheme), entry.name, { publicUrl: PUBLIC_URL })).not.toThrow();
      built += 1;
    }
    expect(built).toBeGreaterThan(30);
  });

  it.each(MISDECLARED)('%s: the catalog schema refuses it, and the engine will not build it', (_, scheme, message) => {
    expect(validateProviderCatalogEntry({ ...structuredClone(PROVIDER_CATALOG.linear), scheme })).toBe(false);
    expect(() => createHmacScheme(scheme, 'entry')).toThrow(message);
  });
});
