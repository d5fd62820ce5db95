/**
 * What a hostile-input surface is: a fast-check arbitrary of inputs and a check that runs one input
 * against a live switchboard and throws RuleBroken if the outcome breaks a rule. The fast tests
 * (test/fuzz/*.test.ts, a few hundred seeded cases each) and bench/fuzz.ts (10,000+ per surface)
 * run exactly these; each surface is a `*-surface.ts` beside this file.
 *
 * Rules for every input:
 *   - no 5xx answer except the documented 503s (MCP session cap, database down — the latter does
 *     not occur here);
 *   - no `internal` error: not as an HTTP envelope, not as a tool error, not as JSON-RPC -32603;
 *   - rejected inputs change no stored row (tables hashed before and after);
 *   - accepted deliveries are stored with exactly the bytes sent;
 *   - the server keeps answering (checked between batches by the callers) and reports no
 *     unhandled rejection (target.faults()).
 */
import type fc from 'fast-check';
import type { FuzzTarget } from './target.ts';

class RuleBroken extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RuleBroken';
  }
}

export function fail(message: string): never {
  throw new RuleBroken(message);
}

export interface Surface<Case> {
  name: string;
  arbitrary: (target: FuzzTarget, state: SurfaceState) => fc.Arbitrary<Case>;
  /** Runs one case; throws RuleBroken when a rule is broken. Returns a label for statistics. */
  run: (target: FuzzTarget, state: SurfaceState, input: Case) => Promise<string>;
  /** Set-up before the cases (a session, some stored events). */
  prepare?: (target: FuzzTarget, state: SurfaceState) => Promise<void>;
}

/** Shared across the cases of one run: ids and cursors that exist, an open MCP session. */
export interface SurfaceState {
  eventIds: string[];
  cursors: string[];
  sessionId: string;
  /** delivery id → the first body stored under it (a later delivery with that id is a duplicate). */
  deliveries: Map<string, Buffer>;
}

export function newState(): SurfaceState {
  return { eventIds: [], cursors: [], sessionId: '', deliveries: new Map() };
}
