/**
 * The asymmetric schemes (src/verify/schemes/public-key-schemes.ts) beyond what every case shows:
 * key rotation, keys in the wrong encoding or of the wrong kind, and malformed signature headers.
 * Keys are made with node:crypto.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { discordCase } from '../../../catalog/discord/discord.case.ts';
import { ed25519Pair, p256Pair } from './key-pairs.ts';
import { presetFor, verifyNow } from './provider-case.ts';
import { sendgridCase } from '../../../catalog/sendgrid/sendgrid.case.ts';
import { telnyxCase } from '../../../catalog/telnyx/telnyx.case.ts';

const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
  .publicKey.export({ format: 'der', type: 'spki' })
  .toString('base64');

describe('public-key schemes', () => {
  for (const c of [discordCase, telnyxCase, sendgridCase]) {
    it(`${c.preset}: during a key rotation any configured key passes, and the detail names which`, async () => {
      const preset = presetFor(c);
      const delivery = await c.deliver(c.secret, Date.now());
      expect(verifyNow(preset, delivery, [c.wrongSecret, c.secret])).toMatchObject({
        ok: true,
        detail: expect.stringContaining('key 2 of 2'),
      });
    });

    it(`${c.preset}: a signature header that is not a signature is malformed, not a mismatch`, async () => {
      const preset = presetFor(c);
      const delivery = await c.deliver(c.secret, Date.now());
      const signatureHeader = preset.originalHeaders?.[0] ?? '';
      const headers = { ...delivery.headers, [signatureHeader]: 'not a signature!' };
      expect(verifyNow(preset, { ...delivery, headers }, [c.secret])).toMatchObject({
        ok: false,
        reason: 'malformed_header',
      });
    });
  }

  it('discord takes its key in hex, telnyx in base64, sendgrid as base64 DER of a P-256 key', () => {
    const discord = presetFor(discordCase);
    const telnyx = presetFor(telnyxCase);
    const sendgrid = presetFor(sendgridCase);
    const hexKey = ed25519Pair('hex').text;
    const base64Key = ed25519Pair('base64').text;
    expect(discord.checkPublicKey?.(hexKey)).toBeNull();
    expect(discord.checkPublicKey?.(base64Key)).toMatch(/Ed25519 public key \(32 bytes in hex\)/);
    expect(telnyx.checkPublicKey?.(base64Key)).toBeNull();
    expect(telnyx.checkPublicKey?.(hexKey)).toMatch(/32 bytes in base64/);
    expect(sendgrid.checkPublicKey?.(p256Pair().text)).toBeNull();
    expect(sendgrid.checkPublicKey?.(p384)).toMatch(/P-256/);
    expect(sendgrid.checkPublicKey?.(base64Key)).toMatch(/P-256/);
  });

  it('an unusable configured key is no key: the delivery is refused as missing_secret', async () => {
    const delivery = await discordCase.deliver(discordCase.secret, Date.now());
    expect(verifyNow(presetFor(discordCase), delivery, ['zz'])).toMatchObject({ ok: false, reason: 'missing_secret' });
  });

  it('asymmetric presets cannot sign, and keep their signature headers as received', () => {
    for (const c of [discordCase, telnyxCase, sendgridCase]) {
      const preset = presetFor(c);
      expect(preset.sign).toBeUndefined();
      expect(preset.credential).toBe('public_key');
      expect(preset.sensitiveHeaders).toEqual([]);
      expect(preset.originalHeaders).toHaveLength(2);
    }
  });
});
