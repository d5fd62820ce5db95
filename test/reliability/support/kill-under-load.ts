/**
 * A signed GitHub load against a switchboard child that is SIGKILLed part-way, as the crash-safety,
 * forwarding and roles files do it: killed after `killAfterMs`, but not before the load's first
 * 2xx (waiting at most 20 s for it): on a busy machine a fresh process can take longer than the
 * window to answer its first request, and a cycle that acknowledged nothing would test nothing.
 * The load is stopped once the child is gone.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { runGithubLoad, type LoadOptions, type LoadReport } from '../../../bench/load-driver.ts';
import { waitForExit, type ChildExit, type SpawnedSwitchboard } from '../../support/spawn-switchboard.ts';

export interface KillUnderLoadOptions extends Omit<LoadOptions, 'baseUrl' | 'signal'> {
  killAfterMs: number;
}

/** Answers how the child exited (the caller checks it was the SIGKILL) and the load's report. */
export async function killUnderLoad(
  child: SpawnedSwitchboard,
  options: KillUnderLoadOptions,
): Promise<{ exit: ChildExit; report: LoadReport }> {
  const { killAfterMs, onOutcome, ...load } = options;
  const stop = new AbortController();
  let firstAck: () => void = () => undefined;
  const acked = new Promise<void>((resolve) => {
    firstAck = resolve;
  });
  const running = runGithubLoad({
    ...load,
    baseUrl: child.url,
    signal: stop.signal,
    onOutcome: (outcome) => {
      onOutcome?.(outcome);
      if (outcome.status === 200) firstAck();
    },
  });
  try {
    await delay(killAfterMs);
    await Promise.race([acked, delay(20_000)]);
    child.kill('SIGKILL');
    const exit = await waitForExit(child, 10_000);
    stop.abort();
    return { exit, report: await running };
  } finally {
    stop.abort();
  }
}
