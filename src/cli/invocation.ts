/**
 * How to name switchboard in a hint, so that the command printed works where the user is.
 *
 * - In a clone of the repository: `npm start -- <command>` (the start script runs the bin, whose
 *   default command is serve; npm finds the clone from any folder inside it, and runs it in the
 *   clone's root, where its .switchboard is). From outside the clone: `node <clone>/bin/switchboard.js`.
 * - Installed, with this copy's `switchboard` on PATH (npm install -g): `switchboard <command>`.
 * - Anywhere else (installed in a project, or run through npx): `npx @switchboard-dev/switchboard
 *   <command>`. The bare unscoped name would ask the registry for a package that is not this one.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN_NAME, PACKAGE_NAME } from '../shared/package-names.ts';

/** @internal outside src/, only tests or benches use it */
export type Invocation = 'clone' | 'outside-clone' | 'installed' | 'npx';

/** The folder holding bin/switchboard.js: the clone, or the installed package. */
function packageRoot(from: string): string | null {
  for (let dir = path.dirname(from); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'bin', 'switchboard.js'))) return dir;
    if (path.dirname(dir) === dir) return null;
  }
}

function realpathOrNull(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}

/** True when `switchboard` on PATH is this package's own bin. */
function onPath(root: string, env: NodeJS.ProcessEnv): boolean {
  const own = realpathOrNull(path.join(root, 'bin', 'switchboard.js'));
  if (own === null) return false;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir !== '' && realpathOrNull(path.join(dir, BIN_NAME)) === own) return true;
  }
  return false;
}

function inside(dir: string, root: string): boolean {
  const relative = path.relative(realpathOrNull(root) ?? root, realpathOrNull(dir) ?? dir);
  return !relative.startsWith('..') && !path.isAbsolute(relative);
}

/**
 * How this process should be named in a hint: the way, and the exact prefix.
 * @internal outside src/, only tests or benches use it
 */
export function detectInvocation(
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
  moduleFile: string = fileURLToPath(import.meta.url),
): { invocation: Invocation; prefix: string } {
  const root = packageRoot(moduleFile);
  // The package ships bin/ and dist/ only: sources beside the bin mean a clone.
  if (root !== null && existsSync(path.join(root, 'src', 'cli'))) {
    return inside(cwd, root)
      ? { invocation: 'clone', prefix: 'npm start --' }
      : { invocation: 'outside-clone', prefix: `node ${path.join(root, 'bin', 'switchboard.js')}` };
  }
  if (root !== null && onPath(root, env)) return { invocation: 'installed', prefix: BIN_NAME };
  return { invocation: 'npx', prefix: `npx ${PACKAGE_NAME}` };
}

let cached: string | undefined;

/** `switchboard token create <name>`, `npm start -- token create <name>`, … for this process. */
export function commandHint(args: string): string {
  cached ??= detectInvocation().prefix;
  return args === '' ? cached : `${cached} ${args}`;
}
