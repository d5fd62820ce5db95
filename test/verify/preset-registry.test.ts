import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.ts';
import { PRESET_NAMES, type PresetName } from '../../generated/constants.ts';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { usesUrl } from '../../src/verify/preset-options.ts';
import { isPresetName } from '../../src/verify/preset-registry.ts';
import type { Preset } from '../../src/verify/preset-types.ts';
import { BINARY_BODY, input, NOW_MS, presetOf, type PresetFragment } from './fixtures.ts';

/** What each preset checks: stated here on purpose, so a preset that changes its trust mode fails. */
const TRUST_MODE: Readonly<Partial<Record<PresetName, string>>> = {
  github: 'signed',
  stripe: 'signed',
  slack: 'signed',
  shopify: 'signed',
  'standard-webhooks': 'signed',
  linear: 'signed',
  'generic-hmac': 'signed',
  token: 'token',
  gitlab: 'token',
  open: 'open',
};

/** Schemes whose signature travels in the body: replay sends the stored bytes, so nothing signs. */
const BODY_SIGNED = new Set<string>(['mailgun', 'adyen']);

function optionsFor(name: PresetName): PresetFragment {
  if (name === 'generic-hmac') return { preset: name, hmac: { header: 'X-Signature' } };
  return usesUrl(name) ? { preset: name, public_url: 'https://hooks.example.com/hooks/x' } : { preset: name };
}

describe('preset registry', () => {
  it('lists the ten presets that predate the catalog, and every catalog entry', () => {
    expect(PRESET_NAMES).toEqual(
      expect.arrayContaining([
        'generic-hmac',
        'github',
        'gitlab',
        'linear',
        'open',
        'shopify',
        'slack',
        'standard-webhooks',
        'stripe',
        'token',
      ]),
    );
    expect([...PRESET_NAMES].sort()).toEqual(Object.keys(PROVIDER_CATALOG).sort());
  });

  it('builds every preset, with the name and the trust mode the table promises', () => {
    for (const name of PRESET_NAMES) {
      const preset = presetOf(optionsFor(name));
      expect(preset.name).toBe(name);
      // A catalog preset's trust mode follows from what it checks with: a key is signed, a credential is token.
      const expected = TRUST_MODE[name] ?? (preset.credential === 'token' ? 'token' : 'signed');
      expect(preset.trustMode).toBe(expected);
      // HTTP Basic "signs" too: it makes its Authorization header from username:password.
      const basic = PROVIDER_CATALOG[name].scheme.kind === 'basic';
      expect(typeof preset.sign === 'function').toBe(
        (preset.credential === 'secret' && !BODY_SIGNED.has(name)) || basic,
      );
    }
  });

  it('declares header names in lower case, as they appear in the header bag', () => {
    for (const name of PRESET_NAMES) {
      const preset = presetOf(optionsFor(name));
      for (const header of [...preset.requiredHeaders.flat(), ...preset.sensitiveHeaders]) {
        expect(header, `${name}: ${header}`).toBe(header.toLowerCase());
      }
    }
  });

  it('recognises preset names', () => {
    expect(isPresetName('github')).toBe(true);
    expect(isPresetName('GitHub')).toBe(false);
    expect(isPresetName(3)).toBe(false);
  });

  it('rejects unknown presets and options that the chosen preset would ignore', () => {
    expect(() => presetOf({ preset: 'bitbucket-server' as PresetName })).toThrow(AppError);
    expect(() => presetOf({ preset: 'github', token_header: 'X-Token' })).toThrow(/token_header/);
    expect(() => presetOf({ preset: 'token', hmac: { header: 'X-S' } })).toThrow(/hmac/);
    expect(() => presetOf({ preset: 'generic-hmac' })).toThrow(/hmac/);
    expect(() => presetOf({ preset: 'open', event_type_from: 'type' })).toThrow(/event_type_from/);
    expect(() => presetOf({ preset: 'open', external_id_from: 'header:' })).toThrow(/external_id_from/);
  });

  it('passes token_header to the token preset', () => {
    const preset = presetOf({ preset: 'token', token_header: 'X-Relay-Key' });
    expect(
      preset.verify({
        body: Buffer.alloc(0),
        headers: { 'x-relay-key': 't0ken-value' },
        secrets: ['t0ken-value'],
        publicKeys: [],
        toleranceSeconds: 300,
        nowMs: 0,
      }),
    ).toEqual({
      ok: true,
      detail: 'token matched (X-Relay-Key)',
    });
  });

  describe('event_type_from / external_id_from', () => {
    const body = Buffer.from(
      JSON.stringify({ type: 'top', meta: { 'kind/name': 'slashed', 'a~b': 'tilde', list: ['zero', 'one'] }, id: 42 }),
    );

    it('reads headers and JSON pointers (with RFC 6901 escapes and array indices)', () => {
      const cases: [string, string][] = [
        ['header:X-Kind', 'from-header'],
        ['/type', 'top'],
        ['/meta/kind~1name', 'slashed'],
        ['/meta/a~0b', 'tilde'],
        ['/meta/list/1', 'one'],
      ];
      for (const [from, expected] of cases) {
        const preset = presetOf({ preset: 'open', event_type_from: from });
        expect(preset.identify(body, { 'x-kind': 'from-header' }).eventType, from).toBe(expected);
      }
      const withId = presetOf({ preset: 'open', external_id_from: '/id' });
      expect(withId.identify(body, {})).toEqual({ eventType: 'top', externalId: '42' });
    });

    it('falls back to the preset’s own answer when the configured source finds nothing', () => {
      const preset = presetOf({ preset: 'stripe', event_type_from: '/nope', external_id_from: 'header:X-Missing' });
      const stripeBody = Buffer.from('{"id":"evt_1","type":"charge.succeeded"}');
      expect(preset.identify(stripeBody, {})).toEqual({ eventType: 'charge.succeeded', externalId: 'evt_1' });
      const onlyId = presetOf({ preset: 'token', external_id_from: 'header:X-Request-Id' });
      expect(onlyId.identify(body, { 'x-request-id': 'req-9' })).toEqual({ eventType: 'top', externalId: 'req-9' });
    });

    it('overrides a signed preset’s identity without touching verification', () => {
      const preset = presetOf({ preset: 'github', external_id_from: 'header:X-Custom-Id' });
      expect(
        preset.identify(Buffer.from('{"action":"opened"}'), { 'x-github-event': 'issues', 'x-custom-id': 'c1' }),
      ).toEqual({
        eventType: 'issues.opened',
        externalId: 'c1',
      });
      const plain = presetOf({ preset: 'github' });
      const body = Buffer.from('{"action":"opened"}');
      const headers = plain.sign?.({ body, secret: 's3cret', nowMs: NOW_MS }) ?? {};
      const check = (p: Preset, secret: string) => p.verify(input(body, headers, [secret]));
      expect(check(preset, 's3cret')).toEqual(check(plain, 's3cret'));
      expect(check(preset, 'other')).toEqual(check(plain, 'other'));
      expect(check(preset, 's3cret').ok).toBe(true);
    });

    it('never throws on bodies that are not JSON', () => {
      const preset = presetOf({ preset: 'open', event_type_from: '/type', external_id_from: '/id' });
      for (const junk of [
        BINARY_BODY,
        Buffer.from('{"type":'),
        Buffer.from('null'),
        Buffer.from('"str"'),
        Buffer.alloc(0),
      ]) {
        expect(preset.identify(junk, {})).toEqual({ eventType: 'unknown', externalId: null });
      }
    });

    it('ignores values that are not strings or numbers', () => {
      const preset = presetOf({ preset: 'open', event_type_from: '/meta', external_id_from: '/meta/list' });
      expect(preset.identify(body, {})).toEqual({ eventType: 'top', externalId: null });
    });
  });
});
