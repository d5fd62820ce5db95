/**
 * What is the Standard Webhooks scheme's own, beyond the catalog table (the family's cases, e.g.
 * catalog/standard-webhooks/standard-webhooks.case.ts, prove signing, refusals, staleness, rotation
 * and replay against the standardwebhooks, svix and senders' packages): the specification's test vector, both header
 * spellings, key forms, the signature list's grammar, how a replay keeps its message id, and naming.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { BINARY_BODY, expectFail, expectOk, input, NOW_MS, presetOf } from './fixtures.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OLD_SECRET = `whsec_${Buffer.from('the previous signing key, 32 b!').toString('base64')}`;
const standardWebhooksPreset = presetOf({ preset: 'standard-webhooks' });
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

  it('rejects a swapped message id: the id is signed', () => {
    const swappedId = { ...swHeaders(), 'webhook-id': 'msg_other' };
    expectFail(standardWebhooksPreset.verify(input(BODY, swappedId, [SECRET])), 'bad_signature');
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

  it('rejects when no configured secret is base64, saying none is usable', () => {
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
