import { h, type JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { EventSummary } from '../../../generated/types.ts';
import { formatBytes, formatFullTime, formatTime } from './format.ts';
import { TrustBadge } from './trust-badge.ts';

interface EventListProps {
  events: readonly EventSummary[];
  selectedId: string | null;
  openId: string | null;
  fresh: ReadonlySet<string>;
  hasMore: boolean;
  loading: boolean;
  onSelect: (id: string) => void;
  onOpen: (id: string) => void;
  onLoadMore: () => void;
}

export const rowId = (id: string): string => `ev-${id}`;

export function EventList(props: EventListProps): JSX.Element {
  const sentinel = useRef<HTMLLIElement>(null);
  const onLoadMore = useRef(props.onLoadMore);
  onLoadMore.current = props.onLoadMore;

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
    return h(
      'div',
      { class: 'empty' },
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

  return h(
    'ul',
    {
      class: 'event-list',
      role: 'listbox',
      'aria-label': 'Events, newest first',
      tabIndex: 0,
      'aria-activedescendant': props.selectedId ? rowId(props.selectedId) : undefined,
    },
    props.events.map((e) =>
      h(
        'li',
        {
          key: e.id,
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
        h(TrustBadge, { trustMode: e.trust_mode, verified: e.verified }),
        h(
          'div',
          { class: 'row-main' },
          h('div', { class: 'row-type' }, e.event_type || h('span', { class: 'muted' }, '(no type)')),
          h(
            'div',
            { class: 'row-meta' },
            h('span', { class: 'row-provider' }, e.provider),
            h('span', { 'aria-hidden': 'true' }, ' · '),
            formatBytes(e.payload_size),
          ),
        ),
        h(
          'time',
          { class: 'row-time', dateTime: e.received_at, title: formatFullTime(e.received_at) },
          formatTime(e.received_at),
        ),
      ),
    ),
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
