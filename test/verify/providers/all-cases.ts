/**
 * Every catalog case: each provider's `catalog/<preset>/<preset>.case.ts`, found by listing the
 * catalog's folders, so a new provider's case runs without being named anywhere else.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ProviderCase } from './provider-case.ts';

const catalog = join(import.meta.dirname, '../../../catalog');
const files = readdirSync(catalog, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap(({ name }) =>
    readdirSync(join(catalog, name))
      .filter((f) => f.endsWith('.case.ts'))
      .map((f) => join(catalog, name, f)),
  );
const modules = await Promise.all(
  files.map((file) => import(pathToFileURL(file).href) as Promise<Record<string, unknown>>),
);

// A case file exports its case, and may export helpers too (discord.case.ts's signed delivery,
// used by the handshake test).
const isCase = (value: unknown): value is ProviderCase =>
  typeof value === 'object' && value !== null && 'preset' in value && 'deliver' in value;

export const ALL_CASES: readonly ProviderCase[] = modules
  .flatMap((module) => Object.values(module).flat().filter(isCase))
  .sort((a, b) => a.preset.localeCompare(b.preset));
