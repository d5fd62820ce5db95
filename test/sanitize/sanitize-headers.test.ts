import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { githubPreset } from '../support/presets.ts';
import { standardWebhooksPreset } from '../support/presets.ts';
import { REDACTED, sanitizeHeaders } from '../../src/sanitize/sanitize-headers.ts';
import { validateEventHeaders } from '../../generated/validators.js';

describe('sanitizeHeaders', () => {
  it('lower-cases names, keeps single values as strings and repeats as lists in arrival order', () => {
    const headers = sanitizeHeaders([
      'Content-Type',
      'application/json',
      'X-A',
      '1',
      'x-b',
      'b',
      'X-a',
      '2',
      'X-A',
      '3',
    ]);
    expect(headers).toEqual({ 'content-type': 'application/json', 'x-a': ['1', '2', '3'], 'x-b': 'b' });
  });

  it('drops hop-by-hop headers and every header the Connection header names', () => {
    const headers = sanitizeHeaders([
      'Connection',
      'keep-alive, X-Private-Hop',
      'Connection',
      'Upgrade',
      'Keep-Alive',
      'timeout=5',
      'Proxy-Connection',
      'keep-alive',
      'Transfer-Encoding',
      'chunked',
      'TE',
      'trailers',
      'Trailer',
      'Expires',
      'Upgrade',
      'websocket',
      'X-Private-Hop',
      'secret-ish',
      'Host',
      'example.com',
    ]);
    expect(headers).toEqual({ host: 'example.com' });
  });

  it('redacts credentials and every preset signature header, keeping their presence visible', () => {
    const headers = sanitizeHeaders(
      [
        'Authorization',
        'Bearer abc',
        'Cookie',
        'a=1',
        'Cookie',
        'b=2',
        'Proxy-Authorization',
        'Basic xyz',
        'X-Hub-Signature-256',
        'sha256=deadbeef',
        'X-Hub-Signature',
        'sha1=deadbeef',
        'X-GitHub-Event',
        'push',
      ],
      { sensitiveHeaders: githubPreset.sensitiveHeaders },
    );
    expect(headers).toEqual({
      authorization: REDACTED,
      cookie: [REDACTED, REDACTED],
      'proxy-authorization': REDACTED,
      'x-hub-signature-256': REDACTED,
      'x-hub-signature': REDACTED,
      'x-github-event': 'push',
    });
  });

  it('matches sensitive names case-insensitively (a configured token header, Svix names)', () => {
    const headers = sanitizeHeaders(['X-My-Token', 't0ken', 'SVIX-SIGNATURE', 'v1,abc'], {
      sensitiveHeaders: [...standardWebhooksPreset.sensitiveHeaders, 'X-MY-TOKEN'],
    });
    expect(headers).toEqual({ 'x-my-token': REDACTED, 'svix-signature': REDACTED });
  });

  it('redacts the common credential names under every preset, open included (26.14)', () => {
    const raw = [
      'Authorization',
      'Bearer real-token',
      'Cookie',
      'sid=1',
      'X-Gitlab-Token',
      'gl-token',
      'X-Relay-Token',
      'relay',
      'X-Hub-Signature-256',
      'sha256=ab',
      'Stripe-Signature',
      't=1,v1=ab',
      'X-Webhook-Secret',
      's3cret',
      'X-Api-Key',
      'key',
      'X-Token-Count',
      '3',
      'X-Event',
      'push',
    ];
    const expected = {
      authorization: REDACTED,
      cookie: REDACTED,
      'x-gitlab-token': REDACTED,
      'x-relay-token': REDACTED,
      'x-hub-signature-256': REDACTED,
      'stripe-signature': REDACTED,
      'x-webhook-secret': REDACTED,
      'x-api-key': REDACTED,
      'x-token-count': '3',
      'x-event': 'push',
    };
    // The open preset names no sensitive header; neither does a queue source.
    expect(sanitizeHeaders(raw)).toEqual(expected);
    expect(sanitizeHeaders(raw, { sensitiveHeaders: [] })).toEqual(expected);
    expect(sanitizeHeaders(raw, { dropHopByHop: false })).toEqual(expected);
  });

  it("keeps an asymmetric preset's original signature headers, which replay sends back unchanged", () => {
    const headers = sanitizeHeaders(['Webhook-Signature', 'v1a,abc', 'X-Other-Signature', 'x'], {
      sensitiveHeaders: [],
      keepHeaders: ['webhook-signature'],
    });
    expect(headers).toEqual({ 'webhook-signature': 'v1a,abc', 'x-other-signature': REDACTED });
  });

  it('drops names outside the stored-name pattern instead of normalising them', () => {
    const headers = sanitizeHeaders(['X Bad', '1', 'x-good', '2', 'Ünicode', '3', '', '4', 'a:b', '5', 'x(y)', '6']);
    expect(headers).toEqual({ 'x-good': '2' });
  });

  it('keeps names like __proto__ as plain data', () => {
    const headers = sanitizeHeaders(['__proto__', 'polluted', 'constructor', 'c']);
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(Object.keys(headers)).toEqual(['__proto__', 'constructor']);
    expect(JSON.parse(JSON.stringify(headers))).toEqual({ ['__proto__']: 'polluted', constructor: 'c' });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('keeps connection-named headers when hop-by-hop dropping is off (queue fields)', () => {
    expect(sanitizeHeaders(['connection', 'x', 'upgrade', 'y'], { dropHopByHop: false })).toEqual({
      connection: 'x',
      upgrade: 'y',
    });
  });

  it('replaces NUL in values, which jsonb cannot hold', () => {
    expect(sanitizeHeaders(['x-a', 'a\u0000b'])).toEqual({ 'x-a': 'a\uFFFDb' });
  });

  it('always produces what schemas/event-headers.schema.json accepts, and never leaks a sensitive value', () => {
    const name = fc.oneof(
      fc.constantFrom(
        'Authorization',
        'cookie',
        'X-Hub-Signature-256',
        'Connection',
        'Upgrade',
        'X-Multi',
        'x-multi',
        'Content-Type',
      ),
      fc.string({ minLength: 0, maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(name, fc.string({ maxLength: 20 })), { maxLength: 30 }), (pairs) => {
        const raw = pairs.flat();
        const headers = sanitizeHeaders(raw, { sensitiveHeaders: githubPreset.sensitiveHeaders });
        expect(validateEventHeaders(headers)).toBe(true);
        for (const sensitive of [
          'authorization',
          'cookie',
          'x-hub-signature-256',
          'x-hub-signature',
          'proxy-authorization',
        ]) {
          const value = headers[sensitive];
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) expect(v).toBe(REDACTED);
        }
        expect(headers).not.toHaveProperty('connection');
      }),
      { numRuns: 300 },
    );
  });
});
