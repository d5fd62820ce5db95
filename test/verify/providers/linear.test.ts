/**
 * A timestamp carried in the body (Linear's webhookTimestamp) is checked by the shared HMAC engine
 * where the catalog says it is: a delivery signed by the case's signer, which @linear/sdk's own
 * verifier first accepts, is refused as stale once its webhookTimestamp is outside the tolerance
 * (and @linear/sdk refuses it too). On the wire, catalog-wire.test.ts shows the same delivery is a
 * 401 recorded unverified. The engine reads any pointer and format a catalog entry declares.
 */
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../../generated/catalog.ts';
import type { HmacScheme } from '../../../generated/types.ts';
import { createHmacScheme } from '../../../src/verify/schemes/hmac-scheme.ts';
import { presetOf } from '../fixtures.ts';
import { hmac } from './provider-case.ts';
import { linearAccepts, linearCase, linearDelivery } from '../../../catalog/linear/linear.case.ts';

const SECRET = linearCase.secret;
const preset = presetOf({ preset: 'linear' });
const check = (
  delivery: { body: Buffer; headers: Record<string, string> },
  nowMs = Date.now(),
  toleranceSeconds = 300,
) => preset.verify({ ...delivery, secrets: [SECRET], publicKeys: [], toleranceSeconds, nowMs });

describe('linear: the body’s webhookTimestamp', () => {
  it('passes when fresh, for @linear/sdk and for switchboard alike', () => {
    const fresh = linearDelivery(SECRET, Date.now());
    expect(linearAccepts(fresh, SECRET)).toBe(true);
    expect(check(fresh)).toEqual({ ok: true, detail: 'hmac-sha256 valid (Linear-Signature)' });
  });

  it('is refused when stale, in the past or the future, though the signature is genuine', () => {
    const now = Date.now();
    const old = linearDelivery(SECRET, now - 600_000);
    expect(linearAccepts(old, SECRET)).toBe(false);
    expect(check(old, now)).toEqual({
      ok: false,
      reason: 'stale_timestamp',
      detail: 'timestamp outside 300 s tolerance (body webhookTimestamp 600 s old)',
    });
    const future = linearDelivery(SECRET, now + 600_000);
    expect(linearAccepts(future, SECRET)).toBe(false);
    expect(check(future, now)).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    // The configured tolerance decides: 90 s old passes at 300 s and is stale at 60 s.
    const ninety = linearDelivery(SECRET, now - 90_000);
    expect(check(ninety, now)).toMatchObject({ ok: true });
    expect(check(ninety, now, 60)).toMatchObject({ ok: false, reason: 'stale_timestamp' });
  });

  it('is required: a genuinely signed body without one is refused, as @linear/sdk refuses it', () => {
    const body = Buffer.from(JSON.stringify({ type: 'Issue', action: 'create', data: {} }));
    const delivery = { body, headers: { 'linear-signature': hmac('sha256', SECRET, [body], 'hex') } };
    expect(linearAccepts(delivery, SECRET)).toBe(false);
    expect(check(delivery)).toEqual({
      ok: false,
      reason: 'stale_timestamp',
      detail: 'webhookTimestamp missing from body; freshness unverifiable',
    });
  });
});

describe('the engine reads the body timestamp a catalog entry declares', () => {
  // Linear's entry with the timestamp elsewhere in the body, in another format and encoding.
  const linear = PROVIDER_CATALOG.linear.scheme as HmacScheme;
  const scheme: HmacScheme = {
    ...linear,
    encoding: 'base64',
    signature: { headers: ['X-Test-Signature'], format: 'plain' },
    timestamp: { from: '/meta/sent_at', format: 'iso8601' },
  };
  const engine = createHmacScheme(scheme, 'test entry');
  const delivery = (sentAt: unknown) => {
    const body = Buffer.from(JSON.stringify({ meta: { sent_at: sentAt }, event: 'ping' }));
    return { body, headers: { 'x-test-signature': hmac('sha256', 'k', [body], 'base64') } };
  };
  const at = (ms: number) => new Date(ms).toISOString();
  const verify = (d: ReturnType<typeof delivery>, nowMs: number) =>
    engine.verify({ ...d, secrets: ['k'], publicKeys: [], toleranceSeconds: 300, nowMs });

  it('at its pointer and in its format', () => {
    const now = Date.now();
    expect(verify(delivery(at(now - 10_000)), now)).toMatchObject({ ok: true });
    expect(verify(delivery(at(now - 301_000)), now)).toEqual({
      ok: false,
      reason: 'stale_timestamp',
      detail: 'timestamp outside 300 s tolerance (body meta/sent_at 301 s old)',
    });
    expect(verify(delivery(now), now)).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(engine.requiredHeaders).toEqual(['x-test-signature']);
  });

  it('only after the signature: a forged stale delivery is a bad signature, not a stale one', () => {
    const now = Date.now();
    const forged = { ...delivery(at(now - 999_000)), headers: { 'x-test-signature': 'AAAA' } };
    expect(verify(forged, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
  });
});
