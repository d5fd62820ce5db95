/**
 * Runs one surface's cases against a target with a fixed seed, counting outcomes by label, then
 * checks the server is still answering and reported no fault. The first broken rule stops the run
 * and is reported with fast-check's seed and path, so the case can be replayed.
 */
import fc from 'fast-check';
import { isResponsive, type FuzzTarget } from './target.ts';
import { newState, type Surface, type SurfaceState } from './surface.ts';

export interface SurfaceReport {
  surface: string;
  cases: number;
  durationMs: number;
  /** Outcome label → how many cases ended with it (status codes, error codes, "stored", …). */
  outcomes: Record<string, number>;
}

export async function runSurface<Case>(
  surface: Surface<Case>,
  target: FuzzTarget,
  options: {
    numRuns: number;
    seed: number;
    state?: SurfaceState;
    /** For surfaces that need no server (config). */ skipLiveness?: boolean;
  },
): Promise<SurfaceReport> {
  const state = options.state ?? newState();
  await surface.prepare?.(target, state);
  const outcomes: Record<string, number> = {};
  let cases = 0;
  const started = performance.now();
  await fc.assert(
    fc.asyncProperty(surface.arbitrary(target, state), async (input) => {
      const label = await surface.run(target, state, input);
      outcomes[label] = (outcomes[label] ?? 0) + 1;
      cases += 1;
      const faults = target.faults();
      if (faults.length > 0) throw new Error(`the server reported a fault:\n${faults.join('\n')}`);
    }),
    { numRuns: options.numRuns, seed: options.seed, endOnFailure: true },
  );
  const durationMs = performance.now() - started;
  if (options.skipLiveness !== true && !(await isResponsive(target)))
    throw new Error(`${surface.name}: the server stopped answering /healthz after ${cases} cases`);
  const faults = target.faults();
  if (faults.length > 0) throw new Error(`${surface.name}: the server reported a fault:\n${faults.join('\n')}`);
  return { surface: surface.name, cases, durationMs, outcomes };
}

export function formatReport(report: SurfaceReport): string {
  const top = Object.entries(report.outcomes)
    .sort((a, b) => b[1] - a[1])
    .map(([label, n]) => `${label}: ${n}`)
    .join(', ');
  return `${report.surface}: ${report.cases} cases in ${(report.durationMs / 1000).toFixed(1)} s — ${top}`;
}
