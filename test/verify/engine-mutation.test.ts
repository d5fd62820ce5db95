/**
 * The catalog cases are what prove each engine, so they must notice a broken one. For every scheme
 * kind with a provider case, this builds the engine's verification as a preset gets it, breaks its
 * verify two ways (a mismatch that passes: the compare flipped; a genuine delivery that fails), and
 * runs the case table's own verdict checks (provider-case.ts: genuine passes, tampered and wrongly
 * keyed fail) against the mutant: each mutant must fail at least one case of its kind, and the
 * unbroken engine none.
 */
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { SchemeKind } from '../../src/verify/engines/engine.ts';
import { engineFor } from '../../src/verify/engines/engine-registry.ts';
import type { Preset, VerifyInput, VerifyOutcome } from '../../src/verify/preset-types.ts';
import { flipByte } from './fixtures.ts';
import { ALL_CASES } from './providers/all-cases.ts';
import { configured, presetFor, verifyNow, type ProviderCase } from './providers/provider-case.ts';

type Verify = (input: VerifyInput) => VerifyOutcome;

const MUTANTS: Readonly<Record<string, (verify: Verify) => Verify>> = {
  'accepts a mismatch (compare flipped)': (verify) => (input) => {
    const outcome = verify(input);
    const mismatch = !outcome.ok && (outcome.reason === 'bad_signature' || outcome.reason === 'token_mismatch');
    return mismatch ? { ok: true, detail: 'mutant' } : outcome;
  },
  'refuses a genuine delivery': (verify) => (input) => {
    const outcome = verify(input);
    return outcome.ok ? { ok: false, reason: 'bad_signature', detail: 'mutant' } : outcome;
  },
};

/** The preset of a case with its engine's verify replaced by what `mutate` makes of it. */
function mutantPreset(c: ProviderCase, mutate: (verify: Verify) => Verify): Preset {
  const preset = presetFor(c);
  const entry = PROVIDER_CATALOG[c.preset];
  const options = { preset: c.preset, public_url: c.config?.public_url };
  const built = engineFor(entry.scheme).build({
    scheme: entry.scheme,
    entry,
    options,
    where: `preset ${c.preset}`,
    credential: preset.credential,
  });
  return { ...preset, verify: mutate(built.verify) };
}

/** The case table's verdict checks (describeProvider's first two), true when every one holds. */
async function casePasses(c: ProviderCase, preset: Preset): Promise<boolean> {
  const right = [configured(c, c.secret)];
  const genuine = await c.deliver(c.secret, Date.now());
  if (!verifyNow(preset, genuine, right).ok) return false;
  if (c.bodyUnsigned !== true && verifyNow(preset, { ...genuine, body: flipByte(genuine.body) }, right).ok) {
    return false;
  }
  const wrong = await c.deliver(c.wrongSecret, Date.now());
  return !verifyNow(preset, wrong, right).ok;
}

const kinds = [...new Set(ALL_CASES.map((c) => PROVIDER_CATALOG[c.preset].scheme.kind))].sort();
const casesOf = (kind: SchemeKind) => ALL_CASES.filter((c) => PROVIDER_CATALOG[c.preset].scheme.kind === kind);

describe('breaking an engine fails the catalog cases of its kind', () => {
  it('covers every engine whose kind has a provider', () => {
    expect(kinds.length).toBeGreaterThanOrEqual(10);
  });

  describe.each(kinds)('engine %s', (kind) => {
    it('as built, passes every case of its kind', async () => {
      const failing: string[] = [];
      for (const c of casesOf(kind))
        if (
          !(await casePasses(
            c,
            mutantPreset(c, (v) => v),
          ))
        )
          failing.push(c.preset);
      expect(failing).toEqual([]);
    });

    it.each(Object.keys(MUTANTS))('broken so it %s, fails a case', async (mutant) => {
      const mutate = MUTANTS[mutant] ?? ((v: Verify) => v);
      const caught: string[] = [];
      for (const c of casesOf(kind)) if (!(await casePasses(c, mutantPreset(c, mutate)))) caught.push(c.preset);
      expect(caught.length, `no ${kind} case notices the mutant`).toBeGreaterThan(0);
    });
  });
});
