/**
 * Every catalog case over real HTTP, through one shared server (one provider per preset): a valid
 * delivery is stored verified; a tampered body, the wrong secret or key and a stale timestamp are
 * 401 and recorded unverified; a delivery without a required header is 400 and not recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Provider } from '../../../generated/types.ts';
import { acceptedId, post, startHarness, type Harness } from '../../ingest/ingest-harness.ts';
import { flipByte } from '../fixtures.ts';
import { ALL_CASES } from './all-cases.ts';
import { BASIC_USERNAME, presetFor, type ProviderCase } from './provider-case.ts';

function providerConfig(c: ProviderCase): Provider {
  const credential =
    c.credential === 'password' ? { username: BASIC_USERNAME, password: c.secret } : { [c.credential]: c.secret };
  return { preset: c.preset, ...credential, ...c.config };
}

describe('every catalog preset on the wire', () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness({
      providers: Object.fromEntries(ALL_CASES.map((c) => [c.preset, providerConfig(c)])),
      // Every case sends its rejected deliveries from 127.0.0.1: all of them must be recorded.
      config: { ingest: { record_rejected_per_minute: 10_000, record_rejected_per_provider_per_minute: 10_000 } },
    });
  });

  afterAll(async () => {
    await harness.close();
  });

  const url = (c: ProviderCase): string => `${harness.url}/hooks/${c.preset}`;

  async function latest(preset: string) {
    const rows = await harness.rows(preset);
    return rows.at(-1);
  }

  for (const c of ALL_CASES) {
    it(`${c.preset}: verified when genuine, 401 and recorded unverified when tampered, wrongly signed or stale, 400 without its header`, async () => {
      const genuine = await c.deliver(c.secret, Date.now());
      const ok = await post(url(c), genuine.body, genuine.headers);
      expect(ok.status, ok.text).toBe(200);
      const stored = await harness.store.get(acceptedId(ok));
      // A credential (HTTP Basic, a token, a passcode) passes its check but is not a signature: never "verified".
      const signed = presetFor(c).trustMode === 'signed';
      expect(stored).toMatchObject({ verified: signed, passedCheck: true, eventType: c.eventType });

      const failures = [
        ...(c.bodyUnsigned === true ? [] : [{ ...genuine, body: flipByte(genuine.body) }]),
        await c.deliver(c.wrongSecret, Date.now()),
        ...(c.timestamped ? [await c.deliver(c.secret, Date.now() - 3_600_000)] : []),
      ];
      for (const failure of failures) {
        const refused = await post(url(c), failure.body, failure.headers);
        expect(refused.status, refused.text).toBe(401);
        expect(await latest(c.preset)).toMatchObject({ verified: false, passedCheck: false });
      }

      if (c.requiredHeader !== null) {
        const before = (await harness.rows(c.preset)).length;
        const name = c.requiredHeader.toLowerCase();
        const headers = Object.fromEntries(Object.entries(genuine.headers).filter(([k]) => k.toLowerCase() !== name));
        expect((await post(url(c), genuine.body, headers)).status).toBe(400);
        expect((await harness.rows(c.preset)).length).toBe(before);
      }
    });
  }
});
