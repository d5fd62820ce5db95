/** Every catalog case (each `<preset>.case.ts` here), for the tests that run them all. */
import { readdirSync } from 'node:fs';
import type { ProviderCase } from './provider-case.ts';

const files = readdirSync(import.meta.dirname).filter((f) => f.endsWith('.case.ts'));
const modules = await Promise.all(files.map((f) => import(`./${f}`) as Promise<Record<string, unknown>>));

// A case file exports one case, or a table of them (body-hmac.case.ts), and may export helpers too
// (discord.case.ts's signed delivery, used by the handshake test).
const isCase = (value: unknown): value is ProviderCase =>
  typeof value === 'object' && value !== null && 'preset' in value && 'deliver' in value;

export const ALL_CASES: readonly ProviderCase[] = modules
  .flatMap((module) => Object.values(module).flat().filter(isCase))
  .sort((a, b) => a.preset.localeCompare(b.preset));
