import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { LiveState } from '../live-stream.ts';

function liveText(state: LiveState): string {
  if (state.kind === 'live') return 'Live';
  if (state.kind === 'connecting') return 'Connecting…';
  if (state.kind === 'offline') {
    return `Offline — retrying in ${Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000))} s`;
  }
  return 'Stopped';
}

/** The live connection's state as a pill: Live, Connecting…, or Offline with a countdown and Retry now. */
export function LiveIndicator({ state, onRetry }: { state: LiveState; onRetry: () => void }): JSX.Element {
  // Re-render every second while offline, so the countdown moves.
  const [, setTick] = useState(0);
  useEffect(() => {
    if (state.kind !== 'offline') return undefined;
    const t = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [state]);
  return (
    <div
      class={`live live-${state.kind}`}
      role="status"
      aria-live="polite"
      data-live={state.kind}
      title={state.kind === 'offline' ? state.reason : undefined}
    >
      <span class="live-dot" aria-hidden="true" />
      <span>{liveText(state)}</span>
      {state.kind === 'offline' ? (
        <button type="button" class="btn btn-link" onClick={onRetry}>
          Retry now
        </button>
      ) : null}
    </div>
  );
}
