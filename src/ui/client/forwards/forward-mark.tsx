import type { JSX } from 'preact';
import type { ForwardState } from '../../../../generated/constants.ts';
import type { ApiEventSummary } from '../../../../generated/types.ts';

const MARK: Readonly<Record<ForwardState, { glyph: string; words: string; tone: string }>> = {
  delivered: { glyph: '✓', words: 'Forwarded', tone: 'good' },
  pending: { glyph: '…', words: 'Forwarding pending', tone: 'warn' },
  failed: { glyph: '!', words: 'Forwarding failed', tone: 'bad' },
};

/** The list row's small forwarding mark; nothing for an event no rule took. */
export function forwardMark(event: ApiEventSummary): JSX.Element | null {
  if (event.forward_state === undefined) return null;
  const look = MARK[event.forward_state];
  return (
    <span
      class={`fwd-mark fwd-${look.tone}`}
      title={look.words}
      role="img"
      aria-label={look.words}
      data-forward-state={event.forward_state}
    >
      {look.glyph}
    </span>
  );
}
