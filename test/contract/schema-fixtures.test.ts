import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as validators from '../../generated/validators.js';
import { SCHEMAS } from '../../generated/schemas.ts';

const fixturesDir = join(import.meta.dirname, 'fixtures');
type Validator = ((data: unknown) => boolean) & { errors?: unknown };
const byName = validators as unknown as Record<string, Validator>;

describe('every schema has a generated validator and fixtures', () => {
  const titles = Object.keys(SCHEMAS);

  it('has a fixture file for each schema and no stray fixture', () => {
    const files = readdirSync(fixturesDir).map((f) => f.replace(/\.json$/, ''));
    expect(files.sort()).toEqual([...titles].sort());
  });

  for (const title of titles) {
    describe(title, () => {
      const fixtures = JSON.parse(readFileSync(join(fixturesDir, `${title}.json`), 'utf8')) as {
        valid: unknown[];
        invalid: unknown[];
      };
      const validate = byName[`validate${title}`];

      it('has a generated validator', () => {
        expect(typeof validate).toBe('function');
      });

      it('accepts every valid fixture', () => {
        expect(fixtures.valid.length).toBeGreaterThan(0);
        for (const sample of fixtures.valid) {
          const ok = validate?.(sample);
          expect(ok, JSON.stringify(validate?.errors)).toBe(true);
        }
      });

      it('rejects every invalid fixture', () => {
        expect(fixtures.invalid.length).toBeGreaterThan(0);
        for (const sample of fixtures.invalid) {
          expect(validate?.(sample), JSON.stringify(sample).slice(0, 200)).toBe(false);
        }
      });
    });
  }
});
