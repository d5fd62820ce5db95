/**
 * The count of verified providers that README.md and docs/providers.md state is the catalog's:
 * every catalog entry that switchboard does not vouch for itself (generic-hmac, token, basic-auth,
 * open), counted here from the catalog, not restated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG, VERIFYING_PRESET_COUNT } from '../../generated/catalog.ts';

const root = join(import.meta.dirname, '../..');
const countsIn = (file: string): number[] =>
  [...readFileSync(join(root, file), 'utf8').matchAll(/<!-- catalog:count -->(\d+)<!-- \/catalog:count -->/g)].map(
    (m) => Number(m[1]),
  );

describe('the verified-provider count', () => {
  const verifying = Object.values(PROVIDER_CATALOG).filter((entry) => entry.proof.by !== 'switchboard');

  it('is the number of catalog entries proven by a provider package or example', () => {
    expect(VERIFYING_PRESET_COUNT).toBe(verifying.length);
    expect(verifying.map((e) => e.name)).not.toContain('basic-auth');
    expect(verifying.map((e) => e.name)).toEqual(expect.arrayContaining(['github', 'twilio', 'discord', 'postmark']));
  });

  it.each(['README.md', 'docs/providers.md'])('%s states it, from the catalog', (file) => {
    const counts = countsIn(file);
    expect(counts.length, `${file} has a <!-- catalog:count --> block`).toBeGreaterThan(0);
    for (const count of counts) expect(count).toBe(verifying.length);
  });
});
