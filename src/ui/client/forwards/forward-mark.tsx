import type { JSX } from 'preact';
import type { ForwardState } from '../../../../generated/constants.ts';
import type { ApiEventSummary } from '../../../../generated/types.ts';

// Retrying and dead differ in glyph and tone: one will likely still go through, the other waits for you.
// A forged event an include_unverified rule sent went out unsigned: never a plain green check.
const MARK: Readonly<Record<ForwardState, { glyph: string; words: string; tone: string }>> = {
  delivered: { glyph: '✓', words: 'Forwarded', tone: 'good' },
  delivered_unsigned: { glyph: '✓', words: 'Forwarded, sent unsigned (it failed its check)', tone: 'unsigned' },
  pending: { glyph: '…', words: 'Forwarding pending', tone: 'neutral' },
  failed: { glyph: '↻', words: 'Forwarding failed, retrying', tone: 'warn' },
  dead: { glyph: '!', words: 'Forwarding dead: retry it by hand', tone: 'bad' },
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
