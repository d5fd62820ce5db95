import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PRESET_NAMES } from '../../generated/constants.ts';
import { constantTimeEqual, digestEqual, findMatchingKey } from '../../src/verify/timing-safe.ts';
import type { Preset } from '../../src/verify/preset-types.ts';
import { flipByte, input, NOW_MS, presetNamed, presetOf, type PresetFragment } from './fixtures.ts';

interface SignedCase {
  label: string;
  preset: Preset;
  /** Turns arbitrary bytes into a secret the preset accepts. */
  secret: (bytes: Uint8Array) => string;
  /** Linear needs its timestamp inside the body; everything else signs the bytes as given. */
  body: (bytes: Uint8Array) => Buffer;
}

const plainSecret = (bytes: Uint8Array): string => `s_${Buffer.from(bytes).toString('hex')}`;
const base64Secret = (bytes: Uint8Array): string => `whsec_${Buffer.from(bytes).toString('base64')}`;
const raw = (bytes: Uint8Array): Buffer => Buffer.from(bytes);

const signedCases: SignedCase[] = [
  ...(['github', 'stripe', 'slack', 'shopify'] as const).map((name) => ({
    label: name,
    preset: presetOf({ preset: name }),
    secret: plainSecret,
    body: raw,
  })),
  { label: 'standard-webhooks', preset: presetOf({ preset: 'standard-webhooks' }), secret: base64Secret, body: raw },
  {
    label: 'linear',
    preset: presetOf({ preset: 'linear' }),
    secret: plainSecret,
    body: (bytes) =>
      Buffer.from(
        JSON.stringify({ type: 'Issue', data: Buffer.from(bytes).toString('latin1'), webhookTimestamp: NOW_MS }),
      ),
  },
  ...(
    [
      { preset: 'generic-hmac', hmac: { header: 'X-Sig', algorithm: 'sha1', encoding: 'base64' } },
      {
        preset: 'generic-hmac',
        hmac: {
          header: 'X-Sig',
          algorithm: 'sha512',
          prefix: 'sha512=',
          signed: '{timestamp}:{body}',
          timestamp_header: 'X-Ts',
        },
      },
    ] satisfies PresetFragment[]
  ).map((options) => ({
    label: `generic ${options.hmac.algorithm}`,
    preset: presetOf(options),
    secret: plainSecret,
    body: raw,
  })),
];

const bytes = fc.uint8Array({ minLength: 1, maxLength: 512 });
const keyBytes = fc.uint8Array({ minLength: 1, maxLength: 64 });

describe('properties of the signed presets', () => {
  for (const c of signedCases) {
    describe(c.label, () => {
      it('sign → verify round-trips for arbitrary bytes and secrets', () => {
        fc.assert(
          fc.property(bytes, keyBytes, fc.integer({ min: 0, max: 2 ** 40 }), (data, key, nowMs) => {
            const secret = c.secret(key);
            const body = c.body(data);
            const headers = c.preset.sign?.({ body, secret, nowMs }) ?? {};
            const outcome = c.preset.verify(
              input(body, headers, [secret], { nowMs: c.label === 'linear' ? NOW_MS : nowMs }),
            );
            expect(outcome.ok, outcome.detail).toBe(true);
          }),
        );
      });

      it('any single-byte change in the body fails with bad_signature', () => {
        fc.assert(
          fc.property(bytes, keyBytes, fc.nat(), fc.integer({ min: 1, max: 255 }), (data, key, at, mask) => {
            const secret = c.secret(key);
            const body = c.body(data);
            const headers = c.preset.sign?.({ body, secret, nowMs: NOW_MS }) ?? {};
            const tampered = Buffer.from(body);
            const index = at % tampered.length;
            tampered[index] = (tampered[index] ?? 0) ^ mask;
            expect(c.preset.verify(input(tampered, headers, [secret]))).toMatchObject({
              ok: false,
              reason: 'bad_signature',
            });
          }),
        );
      });

      it('a signature made with one secret fails under another, and passes in any rotation list holding it', () => {
        fc.assert(
          fc.property(
            bytes,
            fc.uniqueArray(keyBytes, { minLength: 2, maxLength: 4, selector: (k) => Buffer.from(k).toString('hex') }),
            fc.nat(),
            (data, keys, pick) => {
              const secrets = keys.map(c.secret);
              const body = c.body(data);
              const signer = secrets[pick % secrets.length] ?? '';
              const headers = c.preset.sign?.({ body, secret: signer, nowMs: NOW_MS }) ?? {};
              expect(c.preset.verify(input(body, headers, secrets)).ok).toBe(true);
              const others = secrets.filter((s) => s !== signer);
              expect(c.preset.verify(input(body, headers, others))).toMatchObject({
                ok: false,
                reason: 'bad_signature',
              });
            },
          ),
        );
      });

      it('never mentions the secret or the signature in verify_detail', () => {
        fc.assert(
          fc.property(bytes, keyBytes, keyBytes, (data, key, wrong) => {
            const secret = c.secret(key);
            const body = c.body(data);
            const headers = c.preset.sign?.({ body, secret, nowMs: NOW_MS }) ?? {};
            const details = [
              c.preset.verify(input(body, headers, [secret])).detail,
              c.preset.verify(input(flipByte(body, 0), headers, [secret])).detail,
              c.preset.verify(input(body, headers, [c.secret(wrong)])).detail,
            ];
            const values = c.preset.sensitiveHeaders.flatMap((name) =>
              headers[name] === undefined ? [] : [headers[name]],
            );
            for (const detail of details) {
              expect(detail).not.toContain(secret);
              for (const value of values) expect(detail).not.toContain(value);
            }
          }),
        );
      });
    });
  }
});

describe('properties of identify()', () => {
  it('never throws, for any preset, any bytes and any headers', () => {
    const presets = PRESET_NAMES.map(presetNamed);
    const jsonish = fc.oneof(
      fc.uint8Array({ maxLength: 256 }).map((b) => Buffer.from(b)),
      fc.json().map((j) => Buffer.from(j)),
      fc
        .jsonValue()
        .map((v) => Buffer.from(JSON.stringify({ type: v, action: v, id: v, event: v, event_id: v }) ?? '')),
    );
    const headers = fc.dictionary(
      fc.constantFrom(
        'x-github-event',
        'x-github-delivery',
        'x-shopify-topic',
        'webhook-id',
        'svix-id',
        'linear-delivery',
        'x-event-type',
        'x-gitlab-event',
      ),
      fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 2 })),
    );
    fc.assert(
      fc.property(jsonish, headers, (body, hdrs) => {
        for (const preset of presets) {
          const identity = preset.identify(body, hdrs);
          expect(typeof identity.eventType).toBe('string');
          expect(identity.eventType.length).toBeGreaterThan(0);
          expect(identity.externalId === null || typeof identity.externalId === 'string').toBe(true);
        }
      }),
    );
  });
});

describe('properties of the constant-time helpers', () => {
  it('constantTimeEqual agrees with === for any pair of well-formed strings, including prefixes', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 40 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(constantTimeEqual(a, b)).toBe(a === b);
        expect(constantTimeEqual(a, a + b)).toBe(b === '');
      }),
    );
  });

  it('digestEqual agrees with === for any pair of well-formed strings, including prefixes', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 40 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(digestEqual(a, b)).toBe(a === b);
        expect(digestEqual(a, a + b)).toBe(b === '');
      }),
    );
  });

  it('findMatchingKey returns the first key whose value is offered, else -1', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }),
        (keys, offered) => {
          const expected = keys.findIndex((k) => offered.includes(k));
          expect(findMatchingKey(keys, offered, (k) => k)).toBe(expected);
        },
      ),
    );
  });
});
