/**
 * parseConfig on hostile text: random and truncated JSON/YAML, YAML tags, aliases (and an alias
 * bomb), merge keys, multiple documents, deep nesting, duplicate keys, env interpolation edge
 * cases. Whatever the text, it returns a config or throws ConfigError (which the CLI turns into
 * exit code 2 and one message), never anything else.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runSurface } from './support/run-surface.ts';
import { configSurface } from './support/config-surface.ts';
import type { FuzzTarget } from './support/target.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 424_242);
const RUNS = Number(process.env.FUZZ_RUNS ?? 500);

// parseConfig needs no server; the runner's liveness checks get a target that is always fine.
const noServer = {
  faults: () => [],
  url: 'http://127.0.0.1:9',
} as unknown as FuzzTarget;

describe('config files', () => {
  it(`${RUNS} seeded hostile configs: parseConfig returns or throws ConfigError, nothing else`, async () => {
    const report = await runSurface(configSurface, noServer, { numRuns: RUNS, seed: SEED, skipLiveness: true });
    expect(report.cases).toBe(RUNS);
    expect(report.outcomes.ConfigError ?? 0).toBeGreaterThan(0);
    console.info(formatReport(report));
  });
});
