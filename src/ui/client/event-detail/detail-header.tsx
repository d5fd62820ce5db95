import type { JSX } from 'preact';
import type { EventDetail } from '../../../../generated/types.ts';
import { familyOf } from '../api-client.ts';
import { Icon } from '../components/icons.tsx';
import { formatZonedTime } from '../format.ts';

/** The event's type and summary, Compare and Close, then its provider and when it arrived. */
export function DetailHeader({
  event,
  compareWith,
  onClose,
}: {
  event: EventDetail;
  /** Another event of the family to diff against, if there is one. */
  compareWith: string | null;
  onClose: () => void;
}): JSX.Element {
  const time = formatZonedTime(event.received_at);
  return (
    <header class="detail-head">
      <div class="detail-title-row">
        <h2 id="detail-title" class="detail-title">
          {event.event_type || '(no type)'}
        </h2>
        <div class="toolbar">
          {compareWith ? (
            <a
              class="btn btn-small"
              href={`#/diff/${compareWith}/${event.id}`}
              title={`Diff the payload against another ${familyOf(event.event_type)} event`}
              data-testid="compare"
            >
              <Icon name="diff" />
              Compare
            </a>
          ) : null}
          <button type="button" class="btn btn-small btn-ghost" onClick={onClose} aria-label="Close detail (Esc)">
            <Icon name="x" />
          </button>
        </div>
      </div>
      {event.summary === undefined ? null : (
        <p class="detail-summary" data-testid="detail-summary">
          {event.summary}
        </p>
      )}
      <div class="detail-sub">
        <span class="provider-chip">{event.provider}</span>
        <time class="detail-time muted" dateTime={event.received_at} title={time.utc} data-testid="detail-time">
          {time.local}
        </time>
      </div>
    </header>
  );
}
