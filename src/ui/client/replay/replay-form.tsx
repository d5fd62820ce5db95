import type { JSX } from 'preact';
import { Icon } from '../components/icons.tsx';

/** The target URL (replay.default_target to start with) and the button that sends. */
export function ReplayForm({
  target,
  onTarget,
  defaultTarget,
  unsigned,
  busy,
  onSubmit,
}: {
  target: string;
  onTarget: (target: string) => void;
  defaultTarget: string | null;
  /** Only an unsigned send is offered (the event failed its check on arrival). */
  unsigned: boolean;
  busy: boolean;
  onSubmit: (e: Event) => void;
}): JSX.Element {
  return (
    <form class="replay-form" onSubmit={onSubmit}>
      <label for="replay-target" class="field-label">
        Target URL
      </label>
      <div class="input-group">
        <input
          id="replay-target"
          class="input grow mono"
          type="url"
          inputMode="url"
          placeholder={defaultTarget ?? 'http://127.0.0.1:3000/webhooks'}
          value={target}
          required={defaultTarget === null}
          onInput={(ev) => onTarget(ev.currentTarget.value)}
        />
        <button type="submit" class="btn btn-primary" disabled={busy}>
          <Icon name="send" />
          {busy ? 'Sending…' : unsigned ? 'Send unsigned' : 'Replay'}
        </button>
      </div>
      <p class="hint">
        {defaultTarget ? (
          <>
            Default: <code>{defaultTarget}</code>.{' '}
          </>
        ) : (
          'No default target is configured (replay.default_target). '
        )}
        Only loopback and outbound.allow hosts are accepted.
      </p>
    </form>
  );
}
