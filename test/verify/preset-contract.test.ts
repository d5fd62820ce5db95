import { describe, expect, it } from 'vitest';
import { findMissingHeader } from '../../src/verify/headers.ts';
import { effectiveTolerance, freshnessFailure } from '../../src/verify/timestamp.ts';
import { createGenericTokenPreset } from '../support/presets.ts';
import type { Preset } from '../../src/verify/preset-types.ts';
import type { PresetName } from '../../generated/constants.ts';
import { input, NOW_MS, presetOf } from './fixtures.ts';

const SECRET = 'whsec_Y29udHJhY3QtdGVzdC1rZXktMzItYnl0ZXMhISE=';
const BODY = Buffer.from(JSON.stringify({ type: 'contract.check', webhookTimestamp: NOW_MS, id: 'x1' }));

interface Case {
  preset: Preset;
  /** Headers of a delivery that passes. */
  headers: Record<string, string>;
  /** The headers carrying the signature or token, which must be redacted. */
  secretBearing: string[];
}

function signed(preset: Preset, secretBearing: string[]): Case {
  const headers = preset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS }) ?? {};
  return { preset, headers, secretBearing };
}

/**
 * switchboard's own schemes, which have no catalog case (provider-cases.test.ts runs these checks,
 * and more, on every catalog entry).
 */
const cases: Case[] = [
  signed(
    presetOf({
      preset: 'generic-hmac',
      hmac: { header: 'X-Sig', signed: '{header:X-Msg-Id}.{timestamp}.{body}', timestamp_header: 'X-Ts' },
    }),
    ['x-sig'],
  ),
  {
    preset: presetOf({ preset: 'token' }),
    headers: { 'x-webhook-token': SECRET },
    secretBearing: ['x-webhook-token'],
  },
];

/** The header a shared secret's signature or token travels in: stored redacted, never shown. */
const SECRET_BEARING: Readonly<Record<string, string>> = {
  github: 'x-hub-signature-256',
  stripe: 'stripe-signature',
  slack: 'x-slack-signature',
  shopify: 'x-shopify-hmac-sha256',
  'standard-webhooks': 'webhook-signature',
  linear: 'linear-signature',
  gitlab: 'x-gitlab-token',
};

describe('catalog presets signed with a shared secret', () => {
  it.each(Object.entries(SECRET_BEARING))('%s lists %s as sensitive', (name, header) => {
    expect(presetOf({ preset: name as PresetName }).sensitiveHeaders).toContain(header);
  });
});

describe('every preset honours the shared contract', () => {
  for (const { preset, headers, secretBearing } of cases) {
    describe(preset.name, () => {
      it('passes the reference delivery', () => {
        expect(findMissingHeader(preset.requiredHeaders, headers)).toBeNull();
        expect(preset.verify(input(BODY, headers, [SECRET])).ok).toBe(true);
      });

      it('reports missing_header when any required header is dropped', () => {
        for (const entry of preset.requiredHeaders) {
          const names = typeof entry === 'string' ? [entry] : entry;
          const remaining = Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)));
          expect(findMissingHeader(preset.requiredHeaders, remaining)).toBe(names.join(' or '));
          const outcome = preset.verify(input(BODY, remaining, [SECRET]));
          expect(outcome, names.join()).toMatchObject({ ok: false, reason: 'missing_header' });
          expect(outcome.detail.toLowerCase()).toContain(`missing header ${names[0] ?? ''}`);
        }
      });

      it('lists its signature or token headers as sensitive', () => {
        for (const name of secretBearing) expect(preset.sensitiveHeaders).toContain(name);
      });

      it('rejects with missing_secret whatever the request when no secret is configured', () => {
        for (const secrets of [[], [''], ['', '']]) {
          expect(preset.verify(input(BODY, headers, secrets))).toEqual({
            ok: false,
            reason: 'missing_secret',
            detail: 'no secret configured; delivery rejected',
          });
          expect(preset.verify(input(BODY, {}, secrets)).ok).toBe(false);
        }
      });

      it('keeps verify_detail to one short line without the secret or any header value', () => {
        const outcomes = [
          preset.verify(input(BODY, headers, [SECRET])),
          preset.verify(input(BODY, headers, ['whsec_d3JvbmcgYnV0IGJhc2U2NA=='])),
          preset.verify(input(BODY, headers, [SECRET], { nowMs: NOW_MS + 86_400_000 })),
        ];
        for (const outcome of outcomes) {
          expect(outcome.detail.length).toBeLessThan(120);
          expect(outcome.detail).not.toMatch(/[\r\n]/);
          expect(outcome.detail).not.toContain(SECRET);
          expect(outcome.detail).not.toContain(SECRET.slice('whsec_'.length));
          for (const name of secretBearing) expect(outcome.detail).not.toContain(headers[name] ?? '\u0000');
        }
      });
    });
  }
});

describe('timestamp helpers', () => {
  it('falls back to the default tolerance for nonsensical values', () => {
    expect(effectiveTolerance(-1)).toBe(300);
    expect(effectiveTolerance(Number.NaN)).toBe(300);
    expect(effectiveTolerance(Number.POSITIVE_INFINITY)).toBe(300);
    expect(effectiveTolerance(0)).toBe(0);
    expect(effectiveTolerance(42)).toBe(42);
  });

  it('treats the boundary as fresh and one step past it as stale, in both directions', () => {
    expect(freshnessFailure(NOW_MS - 300_000, NOW_MS, 300, 'ts')).toBeNull();
    expect(freshnessFailure(NOW_MS + 300_000, NOW_MS, 300, 'ts')).toBeNull();
    expect(freshnessFailure(NOW_MS - 300_001, NOW_MS, 300, 'ts')?.detail).toBe(
      'timestamp outside 300 s tolerance (ts 300 s old)',
    );
    expect(freshnessFailure(NOW_MS + 300_001, NOW_MS, 300, 'ts')?.detail).toBe(
      'timestamp outside 300 s tolerance (ts 300 s in the future)',
    );
  });
});

describe('header lookup', () => {
  it('takes the first of repeated values, ignores blanks, and never reads inherited properties', () => {
    const token = createGenericTokenPreset();
    expect(token.verify(input(BODY, { 'x-webhook-token': ['t0ken-one', 't0ken-two'] }, ['t0ken-one'])).ok).toBe(true);
    expect(token.verify(input(BODY, { 'x-webhook-token': ['t0ken-two', 't0ken-one'] }, ['t0ken-one'])).ok).toBe(false);
    expect(token.verify(input(BODY, { 'x-webhook-token': '   ' }, ['t0ken-one']))).toMatchObject({
      reason: 'missing_header',
    });
    const proto = createGenericTokenPreset('__proto__');
    expect(proto.verify(input(BODY, {}, ['t0ken-one']))).toMatchObject({ ok: false, reason: 'missing_header' });
  });
});
