import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { standardWebhooksPreset } from '../../src/verify/standard-webhooks-preset.ts';
import { BINARY_BODY, expectFail, expectNoLeak, expectOk, flipByte, input, NOW_MS, NOW_S } from './fixtures.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OLD_SECRET = `whsec_${Buffer.from('the previous signing key, 32 b!').toString('base64')}`;
const MSG_ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const PAYLOAD = JSON.stringify({
  type: 'invoice.paid',
  timestamp: '2025-01-15T12:00:00Z',
  data: { id: 'inv_123', amount: 4200 },
});
const BODY = Buffer.from(PAYLOAD);

/** Headers as the standardwebhooks library produces them. */
function swHeaders(
  secret = SECRET,
  timestampMs = NOW_MS,
  id = MSG_ID,
  payload: string = PAYLOAD,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestampMs / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestampMs), payload),
  };
}

function asSvix(headers: Record<string, string>): Record<string, string> {
  return {
    'svix-id': headers['webhook-id'] ?? '',
    'svix-timestamp': headers['webhook-timestamp'] ?? '',
    'svix-signature': headers['webhook-signature'] ?? '',
  };
}

describe('standard-webhooks preset', () => {
  it('matches the specification’s published test vector', () => {
    const headers = {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    expectOk(
      standardWebhooksPreset.verify(
        input(Buffer.from('{"test": 2432232314}'), headers, [SECRET], { nowMs: 1614265330_000 }),
      ),
    );
  });

  it('accepts a delivery signed by the standardwebhooks library', () => {
    expect(standardWebhooksPreset.verify(input(BODY, swHeaders(), [SECRET]))).toEqual({
      ok: true,
      detail: 'hmac-sha256 valid (webhook-signature)',
    });
  });

  it('accepts the svix-* header names', () => {
    expect(standardWebhooksPreset.verify(input(BODY, asSvix(swHeaders()), [SECRET]))).toEqual({
      ok: true,
      detail: 'hmac-sha256 valid (svix-signature)',
    });
  });

  it('base64-decodes keys without the whsec_ prefix too', () => {
    const bare = SECRET.slice('whsec_'.length);
    expectOk(standardWebhooksPreset.verify(input(BODY, swHeaders(bare), [bare])));
    expectOk(standardWebhooksPreset.verify(input(BODY, swHeaders(SECRET), [bare])));
  });

  it('rejects a wrong secret', () => {
    const other = `whsec_${Buffer.from('some other key').toString('base64')}`;
    expect(standardWebhooksPreset.verify(input(BODY, swHeaders(other), [SECRET]))).toEqual({
      ok: false,
      reason: 'bad_signature',
      detail: 'signature mismatch (webhook-signature)',
    });
  });

  it('rejects a body with one byte flipped, and a swapped message id', () => {
    expectFail(standardWebhooksPreset.verify(input(flipByte(BODY), swHeaders(), [SECRET])), 'bad_signature');
    const swappedId = { ...swHeaders(), 'webhook-id': 'msg_other' };
    expectFail(standardWebhooksPreset.verify(input(BODY, swappedId, [SECRET])), 'bad_signature');
  });

  it('rejects a timestamp outside the tolerance, past or future', () => {
    const old = standardWebhooksPreset.verify(input(BODY, swHeaders(SECRET, NOW_MS - 301_000), [SECRET]));
    expectFail(old, 'stale_timestamp');
    expect(old.detail).toBe('timestamp outside 300 s tolerance (webhook-timestamp 301 s old)');
    expectFail(
      standardWebhooksPreset.verify(input(BODY, swHeaders(SECRET, NOW_MS + 301_000), [SECRET])),
      'stale_timestamp',
    );
    expectOk(standardWebhooksPreset.verify(input(BODY, swHeaders(SECRET, NOW_MS - 299_000), [SECRET])));
  });

  it('reports each missing header, naming both accepted spellings', () => {
    const full = swHeaders();
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _dropped, ...rest } = full;
      const outcome = standardWebhooksPreset.verify(input(BODY, rest, [SECRET]));
      expectFail(outcome, 'missing_header');
      expect(outcome.detail).toBe(`missing header ${name} or ${name.replace('webhook', 'svix')}`);
    }
  });

  it('reports malformed timestamps and signature lists with no v1 entry', () => {
    expectFail(
      standardWebhooksPreset.verify(input(BODY, { ...swHeaders(), 'webhook-timestamp': 'soon' }, [SECRET])),
      'malformed_header',
    );
    const ed25519Only = { ...swHeaders(), 'webhook-signature': 'v1a,aGVsbG8=' };
    expectFail(standardWebhooksPreset.verify(input(BODY, ed25519Only, [SECRET])), 'malformed_header');
  });

  it('accepts a space-separated list where any v1 entry matches', () => {
    const headers = swHeaders();
    const list = `v1a,bm90LWVkMjU1MTk= v1,${Buffer.alloc(32).toString('base64')} ${headers['webhook-signature'] ?? ''}`;
    expectOk(standardWebhooksPreset.verify(input(BODY, { ...headers, 'webhook-signature': list }, [SECRET])));
  });

  it('accepts either secret during rotation', () => {
    const secrets = [SECRET, OLD_SECRET];
    expectOk(standardWebhooksPreset.verify(input(BODY, swHeaders(OLD_SECRET), secrets)));
    expectOk(standardWebhooksPreset.verify(input(BODY, swHeaders(SECRET), secrets)));
    const third = `whsec_${Buffer.from('third key').toString('base64')}`;
    expectFail(standardWebhooksPreset.verify(input(BODY, swHeaders(third), secrets)), 'bad_signature');
  });

  it('rejects when no secret, or no base64 secret, is configured', () => {
    expect(standardWebhooksPreset.verify(input(BODY, swHeaders(), []))).toEqual({
      ok: false,
      reason: 'missing_secret',
      detail: 'no secret configured; delivery rejected',
    });
    const unusable = standardWebhooksPreset.verify(input(BODY, swHeaders(), ['whsec_not base64!']));
    expectFail(unusable, 'missing_secret');
    expect(unusable.detail).toContain('no usable secret');
  });

  describe('sign', () => {
    it('produces headers the standardwebhooks library verifies, keeping the stored message id', () => {
      const nowMs = Date.now();
      const signed =
        standardWebhooksPreset.sign?.({ body: BODY, secret: SECRET, nowMs, headers: { 'webhook-id': MSG_ID } }) ?? {};
      expect(signed['webhook-id']).toBe(MSG_ID);
      expect(signed['webhook-timestamp']).toBe(String(Math.floor(nowMs / 1000)));
      expect(new Webhook(SECRET).verify(PAYLOAD, signed)).toEqual(JSON.parse(PAYLOAD));
      expect(() => new Webhook(OLD_SECRET).verify(PAYLOAD, signed)).toThrow();
    });

    it('generates a message id when none is stored, and keeps svix-* names when those were stored', () => {
      const fresh = standardWebhooksPreset.sign?.({ body: BODY, secret: SECRET, nowMs: NOW_MS }) ?? {};
      expect(fresh['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expectOk(standardWebhooksPreset.verify(input(BODY, fresh, [SECRET])));

      const svix =
        standardWebhooksPreset.sign?.({
          body: BODY,
          secret: SECRET,
          nowMs: NOW_MS,
          headers: { 'svix-id': 'msg_svix' },
        }) ?? {};
      expect(Object.keys(svix).sort()).toEqual(['svix-id', 'svix-signature', 'svix-timestamp']);
      expect(svix['svix-id']).toBe('msg_svix');
      expectOk(standardWebhooksPreset.verify(input(BODY, svix, [SECRET])));
    });

    it('refuses to sign with a key that is not base64', () => {
      expect(() => standardWebhooksPreset.sign?.({ body: BODY, secret: 'whsec_***', nowMs: NOW_MS })).toThrow(/base64/);
    });
  });

  it('verifies binary bodies byte for byte', () => {
    // The library decodes Buffers to UTF-8 before signing, which is lossy for these bytes, so the
    // expected signature is computed from the specification directly.
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    const sig = createHmac('sha256', key).update(`${MSG_ID}.${NOW_S}.`).update(BINARY_BODY).digest('base64');
    const headers = { 'webhook-id': MSG_ID, 'webhook-timestamp': String(NOW_S), 'webhook-signature': `v1,${sig}` };
    expectOk(standardWebhooksPreset.verify(input(BINARY_BODY, headers, [SECRET])));
    expectFail(standardWebhooksPreset.verify(input(flipByte(BINARY_BODY, 4), headers, [SECRET])), 'bad_signature');
  });

  it('never puts the secret or the signature in the detail', () => {
    const headers = swHeaders();
    for (const outcome of [
      standardWebhooksPreset.verify(input(BODY, headers, [SECRET])),
      standardWebhooksPreset.verify(input(flipByte(BODY), headers, [SECRET])),
      standardWebhooksPreset.verify(input(BODY, headers, [SECRET], { nowMs: NOW_MS + 10_000_000 })),
    ]) {
      expectNoLeak(outcome, [SECRET, SECRET.slice(6)], [headers['webhook-signature'] ?? '']);
    }
  });

  it('identifies by body type and the webhook-id (or svix-id) header', () => {
    expect(standardWebhooksPreset.identify(BODY, swHeaders())).toEqual({
      eventType: 'invoice.paid',
      externalId: MSG_ID,
    });
    expect(standardWebhooksPreset.identify(BODY, asSvix(swHeaders()))).toEqual({
      eventType: 'invoice.paid',
      externalId: MSG_ID,
    });
    expect(standardWebhooksPreset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
