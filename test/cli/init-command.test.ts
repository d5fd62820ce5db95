/**
 * `switchboard init` writes the example config to ./switchboard.yaml wherever it is run, so the
 * quick start does not depend on where the clone is, and never overwrites a config.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { childEnv, cliOutcome, REPO, tempDir } from './support/cli-process.ts';

describe('switchboard init', () => {
  it('writes the example as ./switchboard.yaml, which serve and trigger then read', async () => {
    const project = await tempDir('sb-init-');
    const env = childEnv({});
    const wrote = await cliOutcome(['init'], env, project);
    expect(wrote.stderr).toBe('');
    expect(wrote.code).toBe(0);
    const target = join(project, 'switchboard.yaml');
    expect(wrote.stdout).toMatch(new RegExp(`^Wrote ${target.replaceAll('.', '\\.')}; .*Start with: `));
    // The one example of the repository, byte for byte: not a copy kept in the code.
    expect(await readFile(target, 'utf8')).toBe(await readFile(join(REPO, 'switchboard.example.yaml'), 'utf8'));
    const config = loadConfig({ env: {}, cwd: project });
    expect(config.path).toBe(target);
    expect(config.providers.map((p) => p.name)).toEqual(['sandbox', 'github']);
  }, 60_000);

  it('leaves an existing switchboard.yaml alone and exits 2 saying so', async () => {
    const project = await tempDir('sb-init-');
    const target = join(project, 'switchboard.yaml');
    await writeFile(target, 'providers: {}\n');
    const refused = await cliOutcome(['init'], childEnv({}), project);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `switchboard: ${target} already exists; init leaves it as it is. ` +
        'Edit it, or move it away and run init again for a fresh example.\n',
    );
    expect(await readFile(target, 'utf8')).toBe('providers: {}\n');
  }, 60_000);
});
