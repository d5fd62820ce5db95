import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useMemo } from 'preact/hooks';
import type { ApiEventSummary, ProviderStatus } from '../../../../generated/types.ts';
import { EMPTY_FILTERS, filtersActive, type EventFilters } from '../api-client.ts';
import { EVENTS_HASH, eventHash, type Navigate } from '../hooks/use-route.ts';
import { EventList } from './event-list.tsx';
import { FilterBar } from './filter-bar.tsx';
import { ListStatus } from './list-status.tsx';
import type { EventFeed } from './use-event-feed.ts';

export interface EventsViewProps {
  feed: EventFeed;
  filters: EventFilters;
  onFilters: (update: (current: EventFilters) => EventFilters) => void;
  providers: readonly ProviderStatus[];
  selectedId: string | null;
  onSelect: (id: string) => void;
  openId: string | null;
  navigate: Navigate;
  /** The list row's mark (forwarding's), if any. */
  mark?: (event: ApiEventSummary) => ComponentChildren;
  /** The open event's detail. */
  renderDetail: (id: string, onClose: () => void) => ComponentChildren;
}

/** The Events page: filters and the live list beside the open event's detail. */
export function EventsView(props: EventsViewProps): JSX.Element {
  const { feed, filters, onFilters, openId, navigate } = props;
  const filtered = filtersActive(filters);
  const clearFilters = useCallback(() => onFilters(() => EMPTY_FILTERS), [onFilters]);
  const eventTypes = useMemo(() => [...new Set(feed.events.map((e) => e.event_type))].sort(), [feed.events]);
  const close = (): void => navigate(EVENTS_HASH);

  return (
    <main class={`events-layout${openId ? ' has-detail' : ''}`}>
      <div class="list-pane">
        <FilterBar filters={filters} providers={props.providers} eventTypes={eventTypes} onChange={onFilters} />
        <ListStatus
          loading={feed.loading}
          count={feed.events.length}
          hasMore={feed.hasMore}
          filtered={filtered}
          onClearFilters={clearFilters}
        />
        {feed.error ? (
          <p class="form-error list-error" role="alert">
            {feed.error}{' '}
            <button type="button" class="btn btn-link" onClick={feed.reload}>
              Retry
            </button>
          </p>
        ) : null}
        <div class="list-scroll">
          <EventList
            events={feed.events}
            selectedId={props.selectedId}
            openId={openId}
            fresh={feed.fresh}
            hasMore={feed.hasMore}
            loading={feed.loading}
            filtered={filtered}
            onSelect={props.onSelect}
            onOpen={(id) => navigate(eventHash(id))}
            onLoadMore={feed.loadMore}
            onClearFilters={clearFilters}
            mark={props.mark}
          />
        </div>
      </div>
      <div class="detail-pane" role="region" aria-label="Event detail">
        {openId ? (
          props.renderDetail(openId, close)
        ) : (
          <div class="detail-empty">
            <p class="empty-title">Select an event</p>
            <p class="muted">Its verification, headers, payload and replay controls show here.</p>
          </div>
        )}
      </div>
    </main>
  );
}
