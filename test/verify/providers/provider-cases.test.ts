/**
 * The pure checks of every catalog case (describeProvider): a case file is run by being here, with
 * no test file of its own. Checks particular to one provider live in `<preset>.test.ts`. Every
 * catalog entry has its case, so a provider cannot join the catalog unproven.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../../generated/catalog.ts';
import { PRESET_NAMES, type PresetName } from '../../../generated/constants.ts';
import { ALL_CASES } from './all-cases.ts';
import { describeProvider } from './provider-case.ts';

/**
 * The entries with no provider to sign as: the scheme is whatever the user configures, so there is
 * no real delivery to take and no provider's verifier to agree with. Each has its own test instead.
 */
const NO_PROVIDER: Readonly<Partial<Record<PresetName, string>>> = {
  'generic-hmac': 'test/verify/generic-hmac-preset.test.ts',
  open: 'test/verify/open-preset.test.ts',
  token: 'test/verify/token-preset.test.ts',
};

for (const c of ALL_CASES) describeProvider(c);

describe('the catalog table', () => {
  const root = join(import.meta.dirname, '../../..');
  const casesOf = (preset: PresetName) => ALL_CASES.filter((c) => c.preset === preset);

  it('has a proof case for every catalog entry that has a provider', () => {
    const unproven = PRESET_NAMES.filter((preset) => NO_PROVIDER[preset] === undefined && casesOf(preset).length === 0);
    expect(unproven, 'add catalog/<preset>/<preset>.case.ts beside its provider.json').toEqual([]);
  });

  it('has one case per preset, so a table row cannot hide another', () => {
    expect(PRESET_NAMES.filter((preset) => casesOf(preset).length > 1)).toEqual([]);
  });

  it.each(Object.entries(NO_PROVIDER))(
    '%s has no provider to prove against: it is switchboard’s own scheme, proven by %s',
    (preset, file) => {
      expect(PROVIDER_CATALOG[preset as PresetName].proof.by).toBe('switchboard');
      expect(casesOf(preset as PresetName), 'it has a case now: take it off NO_PROVIDER').toEqual([]);
      expect(existsSync(join(root, file))).toBe(true);
    },
  );
});
