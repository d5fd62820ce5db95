/**
 * `switchboard trigger` for the catalog, on the wire: for every catalog case whose preset signs
 * with a secret, the sample trigger sends to a real server on 127.0.0.1 is stored verified, and
 * the provider's own verifier (its package, or its documented scheme) accepts the very request
 * trigger made. An asymmetric preset refuses with a message that says why and what to do instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Provider } from '../../generated/types.ts';
import { PRESET_NAMES } from '../../generated/constants.ts';
import { catalogEntry, credentialOf } from '../../src/presets/preset-registry.ts';
import { listSamples } from '../../src/presets/sample-deliveries.ts';
import { prepareTrigger, triggerSample } from '../../src/trigger/trigger-sample.ts';
import { startHarness, type Harness } from '../ingest/ingest-harness.ts';
import { ALL_CASES } from '../presets/providers/all-cases.ts';
import type { ProviderCase } from '../presets/providers/provider-case.ts';
import { providersFrom, webhookProvider } from '../support/providers.ts';

const config = (c: ProviderCase): Provider => ({ preset: c.preset, [c.credential]: c.secret, ...c.config });

const SIGNING = ALL_CASES.filter((c) => c.credential === 'secret');
const ASYMMETRIC = ALL_CASES.filter((c) => c.credential === 'public_key');

describe('switchboard trigger for catalog presets', () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness({ providers: Object.fromEntries(SIGNING.map((c) => [c.preset, config(c)])) });
  });

  afterAll(async () => {
    await harness?.close();
  });

  const providerOf = (c: ProviderCase) => webhookProvider(providersFrom({ [c.preset]: config(c) }), c.preset);

  it('every preset that signs with a secret has a sample to trigger', () => {
    const symmetric = PRESET_NAMES.filter((name) => credentialOf(catalogEntry(name)) === 'secret');
    expect(symmetric.filter((name) => listSamples(name).length === 0)).toEqual([]);
  });

  for (const c of SIGNING) {
    it(`${c.preset}: the triggered sample is stored verified, and the provider's own verifier accepts it`, async () => {
      const provider = providerOf(c);
      const prepared = await prepareTrigger(provider, undefined, Date.now());
      expect(await c.accepts({ body: prepared.body, headers: prepared.headers }, c.secret)).toBe(true);
      expect(await c.accepts({ body: prepared.body, headers: prepared.headers }, c.wrongSecret)).toBe(false);

      const result = await triggerSample({ provider, baseUrl: harness.url });
      expect(result.status, result.body).toBe(200);
      const { id } = JSON.parse(result.body) as { id: string };
      expect(await harness.store.get(id)).toMatchObject({ verified: true, provider: c.preset });
    });
  }

  for (const c of ASYMMETRIC) {
    it(`${c.preset}: trigger says it cannot sign for a public-key preset, and sends nothing`, async () => {
      await expect(triggerSample({ provider: providerOf(c), baseUrl: 'http://127.0.0.1:9' })).rejects.toThrow(
        /public key; only the provider holds the private key, so switchboard cannot sign a sample/,
      );
    });
  }

  it('standard-webhooks family members configured with whpk_ keys only cannot be triggered either', async () => {
    const whpk = `whpk_${Buffer.alloc(32, 7).toString('base64')}`;
    const provider = webhookProvider(providersFrom({ clerk: { preset: 'clerk', public_key: whpk } }), 'clerk');
    await expect(prepareTrigger(provider, undefined, Date.now())).rejects.toThrow(/a v1a Ed25519 signature/);
  });
});
