import { describe, expect, it } from 'vitest';
import { expectFail, expectOk, presetOf } from '../fixtures.ts';
import { adyenAccepts, adyenBody, adyenCase, adyenItem } from '../../../catalog/adyen/adyen.case.ts';

describe('adyen beyond the common checks', () => {
  const preset = presetOf({ preset: 'adyen' });
  const key = adyenCase.secret;
  const check = (body: Buffer, secrets = [key]) =>
    preset.verify({ body, headers: {}, secrets, publicKeys: [], toleranceSeconds: 300, nowMs: Date.now() });

  it('refuses a changed amount (a signed field), as the package does', () => {
    const body = adyenBody([adyenItem(key)]);
    const changed = Buffer.from(body.toString().replace('"value":10100', '"value":1'));
    expect(adyenAccepts(changed, key)).toBe(false);
    expectFail(check(changed), 'bad_signature');
  });

  it('wants every notification item to pass', () => {
    const good = adyenItem(key);
    const forged = adyenItem(adyenCase.wrongSecret, { eventCode: 'REFUND' });
    expect(adyenAccepts(adyenBody([good, forged]), key)).toBe(false);
    expectFail(check(adyenBody([good, forged])), 'bad_signature');
    expectOk(check(adyenBody([good, adyenItem(key, { eventCode: 'CAPTURE' })])));
  });

  it('says which item lacks its signature, and refuses a key that is not hex at start-up', () => {
    const item = adyenItem(key);
    delete item.NotificationRequestItem.additionalData;
    expectFail(check(adyenBody([item])), 'missing_header');
    expect(preset.checkCredential?.('not-hex')).toMatch(/hex/);
    expect(preset.checkCredential?.(key)).toBeNull();
  });
});
