import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.ts';
import { createGenericHmacPreset } from '../support/presets.ts';
import {
  BINARY_BODY,
  expectFail,
  expectNoLeak,
  expectOk,
  flipByte,
  hmacOptions,
  input,
  NOW_MS,
  NOW_S,
} from './fixtures.ts';

const SECRET = 'generic-secret-7f3a9c';
const OLD_SECRET = 'generic-secret-old-11';
const BODY = Buffer.from('{"type":"order.shipped","id":"ord_991","items":[1,2,3]}');

describe('generic-hmac preset: body only, hex, with prefix', () => {
  const preset = createGenericHmacPreset(hmacOptions({ header: 'X-Signature', prefix: 'sha256=' }));
  const sig = (body: Buffer, secret = SECRET): Record<string, string> => ({
    'x-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
  });

  it('accepts a valid delivery', () => {
    expect(preset.verify(input(BODY, sig(BODY), [SECRET]))).toEqual({
      ok: true,
      detail: 'hmac-sha256 valid (X-Signature)',
    });
  });

  it('rejects a wrong secret and a flipped byte', () => {
    expect(preset.verify(input(BODY, sig(BODY, 'nope'), [SECRET]))).toEqual({
      ok: false,
      reason: 'bad_signature',
      detail: 'signature mismatch (X-Signature)',
    });
    expectFail(preset.verify(input(flipByte(BODY), sig(BODY), [SECRET])), 'bad_signature');
  });

  it('reports a missing header and a missing prefix', () => {
    expect(preset.verify(input(BODY, {}, [SECRET]))).toEqual({
      ok: false,
      reason: 'missing_header',
      detail: 'missing header X-Signature',
    });
    const bare = { 'x-signature': (sig(BODY)['x-signature'] ?? '').slice('sha256='.length) };
    expectFail(preset.verify(input(BODY, bare, [SECRET])), 'malformed_header');
  });

  it('accepts either secret during rotation', () => {
    expectOk(preset.verify(input(BODY, sig(BODY, OLD_SECRET), [SECRET, OLD_SECRET])));
    expectOk(preset.verify(input(BODY, sig(BODY, SECRET), [SECRET, OLD_SECRET])));
    expectFail(preset.verify(input(BODY, sig(BODY, 'third'), [SECRET, OLD_SECRET])), 'bad_signature');
  });

  it('rejects when no secret is configured', () => {
    expectFail(preset.verify(input(BODY, sig(BODY), [])), 'missing_secret');
  });

  it('verifies binary bodies and round-trips its own signature', () => {
    expectOk(preset.verify(input(BINARY_BODY, sig(BINARY_BODY), [SECRET])));
    const signed = preset.sign?.({ body: BINARY_BODY, secret: SECRET, nowMs: NOW_MS });
    expect(signed).toEqual(sig(BINARY_BODY));
  });

  it('has requiredHeaders and sensitiveHeaders in lower case', () => {
    expect(preset.requiredHeaders).toEqual(['x-signature']);
    expect(preset.sensitiveHeaders).toEqual(['x-signature']);
    expect(preset.trustMode).toBe('signed');
  });
});

describe('generic-hmac preset: other algorithms and encodings', () => {
  const cases: {
    options: Parameters<typeof hmacOptions>[0];
    algorithm: 'sha1' | 'sha256' | 'sha512';
    encoding: 'hex' | 'base64';
  }[] = [
    {
      options: { header: 'X-Hook-Sig', algorithm: 'sha1', encoding: 'base64' },
      algorithm: 'sha1',
      encoding: 'base64',
    },
    { options: { header: 'X-Hook-Sig', algorithm: 'sha512' }, algorithm: 'sha512', encoding: 'hex' },
    {
      options: { header: 'X-Hook-Sig', algorithm: 'sha256', encoding: 'base64' },
      algorithm: 'sha256',
      encoding: 'base64',
    },
  ];
  for (const { options, algorithm, encoding } of cases) {
    it(`${algorithm}/${encoding}: valid, wrong secret, tampered`, () => {
      const preset = createGenericHmacPreset(hmacOptions(options));
      const headers = { 'x-hook-sig': createHmac(algorithm, SECRET).update(BODY).digest(encoding) };
      expect(preset.verify(input(BODY, headers, [SECRET]))).toEqual({
        ok: true,
        detail: `hmac-${algorithm} valid (X-Hook-Sig)`,
      });
      expectFail(preset.verify(input(BODY, headers, ['other'])), 'bad_signature');
      expectFail(preset.verify(input(flipByte(BODY), headers, [SECRET])), 'bad_signature');
    });
  }

  it('decodes base64 (whsec_) and hex secrets when asked to', () => {
    const key = Buffer.from('raw key bytes \u0000\u00ff', 'latin1');
    const headers = { 'x-hook-sig': createHmac('sha256', key).update(BODY).digest('hex') };
    const b64 = createGenericHmacPreset(hmacOptions({ header: 'X-Hook-Sig', secret_encoding: 'base64' }));
    expectOk(b64.verify(input(BODY, headers, [`whsec_${key.toString('base64')}`])));
    const hex = createGenericHmacPreset(hmacOptions({ header: 'X-Hook-Sig', secret_encoding: 'hex' }));
    expectOk(hex.verify(input(BODY, headers, [key.toString('hex')])));
    expectFail(hex.verify(input(BODY, headers, ['not hex'])), 'missing_secret');
  });
});

describe('generic-hmac preset: timestamp template', () => {
  const preset = createGenericHmacPreset(
    hmacOptions({
      header: 'X-Signature',
      signed: '{timestamp}.{body}',
      timestamp_header: 'X-Timestamp',
    }),
  );
  const headersAt = (seconds: number, secret = SECRET, body = BODY): Record<string, string> => ({
    'x-timestamp': String(seconds),
    'x-signature': createHmac('sha256', secret).update(`${seconds}.`).update(body).digest('hex'),
  });

  it('accepts a fresh, valid delivery', () => {
    expectOk(preset.verify(input(BODY, headersAt(NOW_S), [SECRET])));
    expect(preset.requiredHeaders).toEqual(['x-signature', 'x-timestamp']);
  });

  it('rejects a wrong secret, a tampered body, a swapped timestamp', () => {
    expectFail(preset.verify(input(BODY, headersAt(NOW_S, 'x'), [SECRET])), 'bad_signature');
    expectFail(preset.verify(input(flipByte(BODY), headersAt(NOW_S), [SECRET])), 'bad_signature');
    expectFail(
      preset.verify(input(BODY, { ...headersAt(NOW_S - 900), 'x-timestamp': String(NOW_S) }, [SECRET])),
      'bad_signature',
    );
  });

  it('rejects a stale or future timestamp', () => {
    const stale = preset.verify(input(BODY, headersAt(NOW_S - 301), [SECRET]));
    expect(stale).toEqual({
      ok: false,
      reason: 'stale_timestamp',
      detail: 'timestamp outside 300 s tolerance (X-Timestamp 301 s old)',
    });
    expectFail(preset.verify(input(BODY, headersAt(NOW_S + 301), [SECRET])), 'stale_timestamp');
  });

  it('reports the missing timestamp header and a malformed one', () => {
    const { 'x-timestamp': _t, ...noTimestamp } = headersAt(NOW_S);
    expect(preset.verify(input(BODY, noTimestamp, [SECRET])).detail).toBe('missing header X-Timestamp');
    expectFail(preset.verify(input(BODY, { ...headersAt(NOW_S), 'x-timestamp': 'now' }, [SECRET])), 'malformed_header');
  });

  it('accepts either secret during rotation', () => {
    expectOk(preset.verify(input(BODY, headersAt(NOW_S, OLD_SECRET), [SECRET, OLD_SECRET])));
  });

  it('signs with a fresh timestamp', () => {
    const signed = preset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS });
    expect(signed).toEqual(headersAt(NOW_S));
  });

  it('never puts the secret or the signature in the detail', () => {
    const headers = headersAt(NOW_S);
    for (const outcome of [
      preset.verify(input(BODY, headers, [SECRET])),
      preset.verify(input(flipByte(BODY), headers, [SECRET])),
      preset.verify(input(BODY, headers, [SECRET], { nowMs: NOW_MS + 999_999 })),
    ]) {
      expectNoLeak(outcome, [SECRET], [headers['x-signature'] ?? '']);
    }
  });
});

describe('generic-hmac preset: a Twitch EventSub style scheme', () => {
  const preset = createGenericHmacPreset(
    hmacOptions({
      header: 'Twitch-Eventsub-Message-Signature',
      prefix: 'sha256=',
      signed: '{header:Twitch-Eventsub-Message-Id}{timestamp}{body}',
      timestamp_header: 'Twitch-Eventsub-Message-Timestamp',
      timestamp_format: 'iso8601',
    }),
  );
  const id = 'befa7b53-d79d-478f-86b9-120f112b044e';
  const headersAt = (iso: string, body = BODY): Record<string, string> => ({
    'twitch-eventsub-message-id': id,
    'twitch-eventsub-message-timestamp': iso,
    'twitch-eventsub-message-signature': `sha256=${createHmac('sha256', SECRET)
      .update(id + iso)
      .update(body)
      .digest('hex')}`,
  });

  it('verifies with an RFC 3339 timestamp carrying nanoseconds', () => {
    const iso = new Date(NOW_MS - 2_000).toISOString().replace('Z', '123456Z');
    expectOk(preset.verify(input(BODY, headersAt(iso), [SECRET])));
    expectFail(
      preset.verify(input(BODY, { ...headersAt(iso), 'twitch-eventsub-message-id': 'other' }, [SECRET])),
      'bad_signature',
    );
  });

  it('rejects stale timestamps and non-ISO ones', () => {
    expectFail(
      preset.verify(input(BODY, headersAt(new Date(NOW_MS - 600_000).toISOString()), [SECRET])),
      'stale_timestamp',
    );
    expectFail(preset.verify(input(BODY, headersAt('Wed, 15 Jan 2025 12:00:00 GMT'), [SECRET])), 'malformed_header');
  });

  it('reports a missing id header, and re-signs keeping the stored id', () => {
    const { 'twitch-eventsub-message-id': _id, ...rest } = headersAt(new Date(NOW_MS).toISOString());
    expect(preset.verify(input(BODY, rest, [SECRET])).detail).toBe('missing header Twitch-Eventsub-Message-Id');
    const signed =
      preset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS, headers: { 'twitch-eventsub-message-id': id } }) ?? {};
    expect(signed).toEqual(headersAt(new Date(NOW_MS).toISOString()));
    const generated = preset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS }) ?? {};
    expect(generated['twitch-eventsub-message-id']).toMatch(/^[0-9a-f-]{36}$/);
    expectOk(preset.verify(input(BODY, generated, [SECRET])));
  });
});

describe('generic-hmac preset: millisecond timestamps', () => {
  it('checks unix_ms freshness', () => {
    const preset = createGenericHmacPreset(
      hmacOptions({
        header: 'X-Sig',
        signed: 'v1:{timestamp}:{body}',
        timestamp_header: 'X-Ts',
        timestamp_format: 'unix_ms',
      }),
    );
    const at = (ms: number): Record<string, string> => ({
      'x-ts': String(ms),
      'x-sig': createHmac('sha256', SECRET).update(`v1:${ms}:`).update(BODY).digest('hex'),
    });
    expectOk(preset.verify(input(BODY, at(NOW_MS - 1_500), [SECRET])));
    expectFail(preset.verify(input(BODY, at(NOW_MS - 300_001), [SECRET])), 'stale_timestamp');
    expect(preset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS })).toEqual(at(NOW_MS));
  });
});

describe('generic-hmac options validation', () => {
  const invalid: [string, Parameters<typeof hmacOptions>[0]][] = [
    ['no header', { header: '' }],
    ['header with a space', { header: 'X Signature' }],
    ['unknown algorithm', { header: 'X-S', algorithm: 'md5' as 'sha1' }],
    ['unknown encoding', { header: 'X-S', encoding: 'base32' as 'hex' }],
    ['template without body', { header: 'X-S', signed: '{timestamp}', timestamp_header: 'X-T' }],
    ['template with body twice', { header: 'X-S', signed: '{body}{body}' }],
    ['typo in a placeholder', { header: 'X-S', signed: '{timestmp}.{body}', timestamp_header: 'X-T' }],
    ['timestamp without header', { header: 'X-S', signed: '{timestamp}.{body}' }],
    ['unsigned timestamp header', { header: 'X-S', timestamp_header: 'X-T' }],
    [
      'bad timestamp format',
      { header: 'X-S', signed: '{timestamp}{body}', timestamp_header: 'X-T', timestamp_format: 'rfc822' as 'unix' },
    ],
    ['empty header placeholder', { header: 'X-S', signed: '{header:}{body}' }],
  ];
  for (const [label, options] of invalid) {
    it(`rejects ${label}`, () => {
      expect(() => createGenericHmacPreset(hmacOptions(options))).toThrow(AppError);
    });
  }

  it('identifies with the generic fallbacks', () => {
    const preset = createGenericHmacPreset(hmacOptions({ header: 'X-S' }));
    expect(preset.identify(BODY, {})).toEqual({ eventType: 'order.shipped', externalId: null });
    expect(preset.identify(BODY, { 'x-event-type': 'from.header' }).eventType).toBe('from.header');
    expect(preset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
