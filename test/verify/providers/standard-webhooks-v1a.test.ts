/**
 * Standard Webhooks v1a (Ed25519) on `standard-webhooks` and every member of the family: with a
 * whpk_ public key configured, a delivery signed with the matching private key passes, one signed
 * with another key or over other bytes does not, and the preset cannot sign (it holds no private
 * key): it replays with the original headers. Keys are made with node:crypto; the message is the
 * one the specification defines, `{id}.{timestamp}.{body}`.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PresetName } from '../../../generated/constants.ts';
import { flipByte, presetOf } from '../fixtures.ts';
import { verifyNow } from './provider-case.ts';

const FAMILY: readonly PresetName[] = ['standard-webhooks', 'svix', 'clerk', 'resend', 'openai', 'replicate', 'polar'];

function keyPair(): { privateKey: KeyObject; whpk: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { privateKey, whpk: `whpk_${raw.toString('base64')}` };
}

function v1aDelivery(privateKey: KeyObject, atMs: number) {
  const body = Buffer.from(JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } }));
  const id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const timestamp = String(Math.floor(atMs / 1000));
  const signature = sign(null, Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]), privateKey);
  return {
    body,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1a,${signature.toString('base64')}`,
    },
  };
}

describe('Standard Webhooks v1a (Ed25519) on every member of the family', () => {
  const current = keyPair();
  const other = keyPair();

  for (const name of FAMILY) {
    it(`${name}: a v1a delivery passes with its whpk_ key, fails with another key, a tampered body or a stale timestamp`, () => {
      const preset = presetOf({ preset: name, public_key: current.whpk });
      expect(preset.credential).toBe('public_key');
      expect(preset.sign).toBeUndefined();
      expect(preset.originalHeaders).toEqual(expect.arrayContaining(['webhook-signature', 'webhook-timestamp']));
      const delivery = v1aDelivery(current.privateKey, Date.now());
      expect(verifyNow(preset, delivery, [current.whpk])).toMatchObject({ ok: true });
      expect(verifyNow(preset, delivery, [other.whpk, current.whpk])).toMatchObject({
        ok: true,
        detail: expect.stringContaining('key 2 of 2'),
      });
      expect(verifyNow(preset, v1aDelivery(other.privateKey, Date.now()), [current.whpk])).toMatchObject({
        ok: false,
        reason: 'bad_signature',
      });
      expect(verifyNow(preset, { ...delivery, body: flipByte(delivery.body) }, [current.whpk])).toMatchObject({
        ok: false,
        reason: 'bad_signature',
      });
      expect(verifyNow(preset, v1aDelivery(current.privateKey, Date.now() - 3_600_000), [current.whpk])).toMatchObject({
        ok: false,
        reason: 'stale_timestamp',
      });
    });
  }

  it('a whpk_ key that is not 32 bytes of base64 is refused as a public key, and any whpk_ as a secret', () => {
    const preset = presetOf({ preset: 'svix', public_key: current.whpk });
    expect(preset.checkPublicKey?.('whpk_not-a-key')).toMatch(/whpk_/);
    expect(preset.checkPublicKey?.(current.whpk)).toBeNull();
    expect(preset.checkCredential?.(current.whpk)).toMatch(/public_key/);
  });
});
