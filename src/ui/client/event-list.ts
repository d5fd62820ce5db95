import { h, type ComponentChildren, type JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiEventSummary } from '../../../generated/types.ts';
import { formatBytes, formatRelative, formatZonedTime } from './format.ts';
import { TrustBadge } from './trust-badge.ts';

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
  mark?: (event: ApiEventSummary) => ComponentChildren;
}

export const rowId = (id: string): string => `ev-${id}`;

// Relative times ("2 min ago") are redrawn this often.
const CLOCK_TICK_MS = 15_000;

/** The current time, updated every `ms`, so relative times move without new data. */
export function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

function EmptyList({ filtered, onClearFilters }: Pick<EventListProps, 'filtered' | 'onClearFilters'>): JSX.Element {
  if (filtered) {
    return h(
      'div',
      { class: 'empty', 'data-testid': 'empty-filtered' },
      h('p', { class: 'empty-title' }, 'No events match these filters'),
      h('p', null, 'Events that arrive and match will show up here live.'),
      h('button', { type: 'button', class: 'btn', onClick: onClearFilters }, 'Clear filters'),
    );
  }
  return h(
    'div',
    { class: 'empty', 'data-testid': 'empty-none' },
    h('p', { class: 'empty-title' }, 'No events yet'),
    h(
      'p',
      null,
      'Send a webhook to one of your provider routes, or run ',
      h('code', null, 'npx switchboard trigger <provider>'),
      '. It will appear here within a second.',
    ),
  );
}

function EventRow({
  event: e,
  props,
  now,
}: {
  event: ApiEventSummary;
  props: EventListProps;
  now: number;
}): JSX.Element {
  const mark = props.mark?.(e);
  return h(
    'li',
    {
      id: rowId(e.id),
      role: 'option',
      'aria-selected': e.id === props.selectedId ? 'true' : 'false',
      'data-event-id': e.id,
      class: [
        'event-row',
        e.id === props.selectedId ? 'is-selected' : '',
        e.id === props.openId ? 'is-open' : '',
        props.fresh.has(e.id) ? 'is-fresh' : '',
      ]
        .filter(Boolean)
        .join(' '),
      onClick: () => {
        props.onSelect(e.id);
        props.onOpen(e.id);
      },
    },
    h('span', { class: 'row-badge' }, h(TrustBadge, { trustMode: e.trust_mode, verified: e.verified })),
    h(
      'div',
      { class: 'row-main' },
      h(
        'div',
        { class: 'row-head' },
        h('span', { class: 'row-type' }, e.event_type || h('span', { class: 'muted' }, '(no type)')),
        h('span', { class: 'row-provider', title: `${e.provider} · ${formatBytes(e.payload_size)}` }, e.provider),
      ),
      // The line that tells this event from others of its type; the size when there is none.
      e.summary === undefined
        ? h('div', { class: 'row-meta' }, formatBytes(e.payload_size))
        : h('div', { class: 'row-meta row-summary', title: e.summary, 'data-testid': 'row-summary' }, e.summary),
    ),
    h(
      'div',
      { class: 'row-side' },
      h(
        'time',
        { class: 'row-time', dateTime: e.received_at, title: formatZonedTime(e.received_at).local },
        formatRelative(e.received_at, now),
      ),
      mark === undefined || mark === null ? null : h('span', { class: 'row-mark' }, mark),
    ),
  );
}

export function EventList(props: EventListProps): JSX.Element {
  const sentinel = useRef<HTMLLIElement>(null);
  const onLoadMore = useRef(props.onLoadMore);
  onLoadMore.current = props.onLoadMore;
  const now = useNow(CLOCK_TICK_MS);

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
    return h(EmptyList, { filtered: props.filtered, onClearFilters: props.onClearFilters });
  }

  return h(
    'ul',
    {
      class: 'event-list',
      role: 'listbox',
      'aria-label': 'Events, newest first',
      tabIndex: 0,
      'aria-activedescendant': props.selectedId ? rowId(props.selectedId) : undefined,
    },
    props.events.map((e) => h(EventRow, { key: e.id, event: e, props, now })),
    props.hasMore
      ? h(
          'li',
          { ref: sentinel, class: 'list-more', role: 'presentation' },
          h('button', { type: 'button', class: 'btn btn-link', onClick: props.onLoadMore }, 'Load older events'),
        )
      : props.events.length > 0
        ? h('li', { class: 'list-end', role: 'presentation' }, 'No older events')
        : null,
  );
}
