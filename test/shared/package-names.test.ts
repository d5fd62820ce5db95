import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BIN_NAME, PACKAGE_NAME } from '../../src/shared/package-names.ts';

// The hints print these names as commands to run, so they must be the ones npm installs.
describe('package names', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    name: string;
    bin: Record<string, string>;
  };

  it('PACKAGE_NAME is the name package.json publishes', () => {
    expect(PACKAGE_NAME).toBe(manifest.name);
  });

  it('BIN_NAME is the bin package.json installs', () => {
    expect(Object.keys(manifest.bin)).toEqual([BIN_NAME]);
  });
});
