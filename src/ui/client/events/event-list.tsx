import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { ApiEventSummary } from '../../../../generated/types.ts';
import { TrustBadge } from '../components/trust-badge.tsx';
import { formatBytes, formatRelative, formatZonedTime } from '../format.ts';
import { useNow } from '../hooks/use-now.ts';
import { EmptyList } from './empty-list.tsx';

interface EventListProps {
  events: readonly ApiEventSummary[];
  selectedId: string | null;
  openId: string | null;
  fresh: ReadonlySet<string>;
  hasMore: boolean;
  loading: boolean;
  /** Filters are set: an empty list then means nothing matches them, not that nothing arrived. */
  filtered: boolean;
  onSelect: (id: string) => void;
  onOpen: (id: string) => void;
  onLoadMore: () => void;
  onClearFilters: () => void;
  /**
   * A small mark at the end of a row, next to its time, for views that add a state to each event
   * (forwarding's delivery state, say). Nothing by default.
   */
  mark?: ((event: ApiEventSummary) => ComponentChildren) | undefined;
}

const rowId = (id: string): string => `ev-${id}`;

// Relative times ("2 min ago") are redrawn this often.
const CLOCK_TICK_MS = 15_000;

function EventRow({ event: e, props, now }: { event: ApiEventSummary; props: EventListProps; now: number }) {
  const mark = props.mark?.(e);
  const classes = [
    'event-row',
    e.id === props.selectedId ? 'is-selected' : '',
    e.id === props.openId ? 'is-open' : '',
    props.fresh.has(e.id) ? 'is-fresh' : '',
  ];
  return (
    <li
      id={rowId(e.id)}
      role="option"
      aria-selected={e.id === props.selectedId ? 'true' : 'false'}
      data-event-id={e.id}
      class={classes.filter(Boolean).join(' ')}
      onClick={() => {
        props.onSelect(e.id);
        props.onOpen(e.id);
      }}
    >
      <span class="row-badge">
        <TrustBadge trustMode={e.trust_mode} verified={e.verified} />
      </span>
      <div class="row-main">
        <div class="row-head">
          <span class="row-type">{e.event_type || <span class="muted">(no type)</span>}</span>
          <span class="row-provider" title={`${e.provider} · ${formatBytes(e.payload_size)}`}>
            {e.provider}
          </span>
        </div>
        {/* The line that tells this event from others of its type; the size when there is none. */}
        {e.summary === undefined ? (
          <div class="row-meta">{formatBytes(e.payload_size)}</div>
        ) : (
          <div class="row-meta row-summary" title={e.summary} data-testid="row-summary">
            {e.summary}
          </div>
        )}
      </div>
      <div class="row-side">
        <time class="row-time" dateTime={e.received_at} title={formatZonedTime(e.received_at).local}>
          {formatRelative(e.received_at, now)}
        </time>
        {mark === undefined || mark === null ? null : <span class="row-mark">{mark}</span>}
      </div>
    </li>
  );
}

export function EventList(props: EventListProps): JSX.Element {
  const sentinel = useRef<HTMLLIElement>(null);
  const onLoadMore = useRef(props.onLoadMore);
  onLoadMore.current = props.onLoadMore;
  // The tick moves relative times along; a render for new rows reads the clock afresh, so a live
  // row is not drawn against a time up to a tick old.
  const now = Math.max(useNow(CLOCK_TICK_MS), Date.now());

  // Pages on scroll: when the sentinel under the last row comes into view, fetch the next page.
  useEffect(() => {
    const el = sentinel.current;
    if (!el) return undefined;
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) onLoadMore.current();
      },
      { rootMargin: '200px' },
    );
    observer.observe(el);
    return () => observer.disconnect();
  }, [props.hasMore]);

  // Keyboard selection scrolls the chosen row into view.
  useEffect(() => {
    if (props.selectedId) document.getElementById(rowId(props.selectedId))?.scrollIntoView({ block: 'nearest' });
  }, [props.selectedId]);

  if (!props.loading && props.events.length === 0) {
    return <EmptyList filtered={props.filtered} onClearFilters={props.onClearFilters} />;
  }

  return (
    <ul
      class="event-list"
      role="listbox"
      aria-label="Events, newest first"
      tabIndex={0}
      aria-activedescendant={props.selectedId ? rowId(props.selectedId) : undefined}
    >
      {props.events.map((e) => (
        <EventRow key={e.id} event={e} props={props} now={now} />
      ))}
      {props.hasMore ? (
        <li ref={sentinel} class="list-more" role="presentation">
          <button type="button" class="btn btn-link" onClick={props.onLoadMore}>
            Load older events
          </button>
        </li>
      ) : props.events.length > 0 ? (
        <li class="list-end" role="presentation">
          No older events
        </li>
      ) : null}
    </ul>
  );
}
