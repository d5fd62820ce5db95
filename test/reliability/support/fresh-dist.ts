/**
 * Global setup of the reliability suite: its children run the built CLI (dist/, see childEntry in
 * spawn-switchboard.ts), so dist/ is rebuilt first when any source is newer than it, the same
 * check `npm pack` makes. In CI, `npm ci` has just built it and this only compares timestamps.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../support/spawn-switchboard.ts';

export default function setup(): void {
  const result = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build.js'), '--if-stale'], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error(`building dist/ for the reliability suite failed (exit ${result.status})`);
}
