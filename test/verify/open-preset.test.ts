import { describe, expect, it } from 'vitest';
import { openPreset } from '../support/presets.ts';
import { BINARY_BODY, input } from './fixtures.ts';

describe('open preset', () => {
  it('accepts anything, with no secret, and says so', () => {
    for (const body of [Buffer.from('{}'), BINARY_BODY, Buffer.alloc(0)]) {
      expect(openPreset.verify(input(body, {}, []))).toEqual({ ok: true, detail: 'no verification: open provider' });
    }
    expect(openPreset.verify(input(BINARY_BODY, { 'x-hub-signature-256': 'sha256=00' }, ['ignored']))).toEqual({
      ok: true,
      detail: 'no verification: open provider',
    });
  });

  it('declares open trust, no required headers and no signing', () => {
    expect(openPreset.trustMode).toBe('open');
    expect(openPreset.requiredHeaders).toEqual([]);
    expect(openPreset.sign).toBeUndefined();
  });

  it('identifies with the generic fallbacks', () => {
    expect(openPreset.identify(Buffer.from('{"type":"ping"}'), {})).toEqual({ eventType: 'ping', externalId: null });
    expect(openPreset.identify(Buffer.from('{"type":"ping"}'), { 'x-event': 'pong' }).eventType).toBe('pong');
    expect(openPreset.identify(BINARY_BODY, {})).toEqual({ eventType: 'unknown', externalId: null });
    expect(openPreset.identify(Buffer.from('[1,2'), {})).toEqual({ eventType: 'unknown', externalId: null });
  });
});
