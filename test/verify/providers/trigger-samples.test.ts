/**
 * `switchboard trigger <preset>` for every catalog case that can sign: the sample it sends, signed
 * with the case's secret, passes switchboard's check and the provider's own verifier, and is named
 * as the provider names it.
 */
import { describe, expect, it } from 'vitest';
import { sampleDelivery } from '../../../src/verify/sample-deliveries.ts';
import { ALL_CASES } from './all-cases.ts';
import { configured, presetFor, verifyNow } from './provider-case.ts';

describe('trigger samples of the catalog', () => {
  for (const c of ALL_CASES) {
    const preset = presetFor(c);
    if (preset.sign === undefined && preset.tokenHeader === undefined) continue;
    it(`${c.preset}: the sample trigger sends is accepted by the provider's own verifier`, async () => {
      const secret = configured(c, c.secret);
      const delivery = sampleDelivery(preset, undefined, secret, Date.now());
      if (delivery === undefined) throw new Error(`${c.preset} has no sample`);
      const signed = { body: delivery.body, headers: delivery.headers };
      expect(verifyNow(preset, signed, [secret]), c.preset).toMatchObject({ ok: true });
      expect(await c.accepts(signed, c.secret)).toBe(true);
      expect(preset.identify(delivery.body, delivery.headers).eventType).not.toBe('unknown');
    });
  }
});
