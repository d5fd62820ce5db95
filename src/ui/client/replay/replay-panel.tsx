import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, type ApiClient } from '../api-client.ts';
import { useLoaded } from '../hooks/use-polled.ts';
import { ReplayForm } from './replay-form.tsx';
import { ReplayHistory } from './replay-history.tsx';
import { ReplayOutcome, type Outcome } from './replay-outcome.tsx';

/** Replay: re-send the stored bytes to a target, see what it answered, and the event's replay history. */
export function ReplayPanel({
  api,
  eventId,
  defaultTarget,
  serverTokenCaller,
  unsignedRule,
}: {
  api: ApiClient;
  eventId: string;
  defaultTarget: string | null;
  /** The caller name of SWITCHBOARD_TOKEN: its attempts say "server token". */
  serverTokenCaller: string | null;
  /** Set for an event that failed its check on arrival: why it can only be sent unsigned. */
  unsignedRule: string | null;
}): JSX.Element {
  const unsigned = unsignedRule !== null;
  const [target, setTarget] = useState(defaultTarget ?? '');
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const history = useLoaded(() => api.replays(eventId), [api, eventId], 'Could not load the replay history.');

  useEffect(() => setOutcome(null), [api, eventId]);
  useEffect(() => setTarget(defaultTarget ?? ''), [defaultTarget]);

  const replay = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ kind: 'result', result: await api.replay(eventId, target, unsigned), unsigned });
    } catch (err) {
      setOutcome({
        kind: 'error',
        error: err instanceof ApiError ? err : new ApiError(0, 'internal', 'Replay failed.'),
      });
    } finally {
      setBusy(false);
      history.reload();
    }
  };

  return (
    <section class="card" aria-labelledby="replay-title">
      <h3 id="replay-title" class="card-title">
        Replay
      </h3>
      {unsigned ? (
        <p class="notice" role="note" data-testid="replay-unsigned-rule">
          {unsignedRule}
        </p>
      ) : null}
      {/* Shape repeat by intent: props handed on by name, alike in shape to other views' (no logic to share). */}
      <ReplayForm
        target={target}
        onTarget={setTarget}
        defaultTarget={defaultTarget}
        unsigned={unsigned}
        busy={busy}
        onSubmit={(e) => void replay(e)}
      />
      {outcome === null ? null : <ReplayOutcome outcome={outcome} />}
      <h4 class="subhead">History</h4>
      <ReplayHistory
        history={history.value?.attempts ?? null}
        error={history.error}
        serverTokenCaller={serverTokenCaller}
      />
    </section>
  );
}
