/**
 * `switchboard init`: writes switchboard.example.yaml, as the package ships it, to ./switchboard.yaml,
 * where serve and trigger look for a config. The example is the one file in the repository (the
 * build copies it into dist/ beside the code, as it does package.json), so there is no second copy
 * to drift. An existing switchboard.yaml is never overwritten.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CliIo } from './cli-io.ts';
import { EXIT_USAGE } from './command-line.ts';
import { commandHint } from './invocation.ts';

/** The example config: ../../ is the repository's root from src/cli/, and dist/ from dist/src/cli/. */
export const EXAMPLE_CONFIG_URL = new URL('../../switchboard.example.yaml', import.meta.url);

export async function runInitCommand(io: CliIo, cwd: string = process.cwd()): Promise<number> {
  const target = path.join(cwd, 'switchboard.yaml');
  const example = await readFile(EXAMPLE_CONFIG_URL, 'utf8');
  try {
    // wx: created here, or refused if it exists, in one step (no check-then-write race).
    await writeFile(target, example, { flag: 'wx', mode: 0o644 });
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) throw err;
    io.err(
      `switchboard: ${target} already exists; init leaves it as it is. ` +
        'Edit it, or move it away and run init again for a fresh example.\n',
    );
    return EXIT_USAGE;
  }
  io.out(`Wrote ${target}; its comments say what each line does. Start with: ${commandHint('serve')}\n`);
  return 0;
}
