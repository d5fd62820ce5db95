import type { JSX } from 'preact';
import { useCallback, useMemo, useState } from 'preact/hooks';
import { ApiClient, EMPTY_FILTERS, type EventFilters } from '../api-client.ts';
import { DiffView } from '../diff/diff-view.tsx';
import { EventDetailPane } from '../event-detail/event-detail-pane.tsx';
import { EventsView } from '../events/events-view.tsx';
import { useEventFeed } from '../events/use-event-feed.ts';
import { DeliveriesPanel } from '../forwards/deliveries-panel.tsx';
import { forwardMark } from '../forwards/forward-mark.tsx';
import { ForwardsView } from '../forwards/forwards-view.tsx';
import { useListKeys } from '../hooks/use-list-keys.ts';
import { useRoute } from '../hooks/use-route.ts';
import { CliCommand, INSTALLED_CLI } from '../cli-command.ts';
import { ProvidersView } from '../providers/providers-view.tsx';
import { TopBar } from './top-bar.tsx';
import { useServerFacts } from './use-server-facts.ts';

/** Everything after sign-in: the top bar and the page the route names. */
export function Shell({ token, onSignOut }: { token: string; onSignOut: (notice: string | null) => void }) {
  const expired = useCallback(() => onSignOut('Your token was not accepted any more. Sign in again.'), [onSignOut]);
  const api = useMemo(() => new ApiClient(token, expired), [token, expired]);
  const [route, navigate] = useRoute();
  const server = useServerFacts(api);
  // The filters, the list and the detail's tab live here, so they survive a visit to another page.
  const [filters, setFilters] = useState<EventFilters>(EMPTY_FILTERS);
  const feed = useEventFeed(api, filters, expired);
  const [tab, setTab] = useState('payload');
  const openId = route.view === 'events' ? route.id : null;
  const [selectedId, setSelectedId] = useListKeys({
    active: route.view === 'events',
    events: feed.events,
    openId,
    loadMore: feed.loadMore,
    navigate,
  });

  const renderDetail = (id: string, onClose: () => void): JSX.Element => (
    <EventDetailPane
      key={id}
      api={api}
      id={id}
      defaultTarget={server.defaultTarget}
      serverTokenCaller={server.serverTokenCaller}
      tab={tab}
      onTab={setTab}
      onClose={onClose}
      extraTabs={
        server.forwarding
          ? (event) => [
              {
                id: 'forwarding',
                label: 'Forwarding',
                render: () => <DeliveriesPanel api={api} eventId={event.id} />,
              },
            ]
          : undefined
      }
    />
  );

  return (
    <CliCommand.Provider value={server.cliCommand ?? INSTALLED_CLI}>
      <div class="shell">
        <TopBar route={route} live={feed.live} onRetryLive={feed.retryLive} onSignOut={() => onSignOut(null)} />
        {route.view === 'providers' ? (
          <ProvidersView api={api} providers={server.providers} error={server.providersError} />
        ) : route.view === 'forwards' ? (
          <ForwardsView api={api} />
        ) : route.view === 'diff' ? (
          <DiffView api={api} events={feed.events} a={route.a} b={route.b} navigate={navigate} />
        ) : (
          // Shape repeat by intent: props handed on by name, alike in shape to other views' (no logic to share).
          <EventsView
            feed={feed}
            filters={filters}
            onFilters={setFilters}
            providers={server.providers ?? []}
            selectedId={selectedId}
            onSelect={setSelectedId}
            openId={openId}
            navigate={navigate}
            mark={forwardMark}
            renderDetail={renderDetail}
          />
        )}
      </div>
    </CliCommand.Provider>
  );
}
