import { h, type JSX } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ProviderStatus } from '../../../generated/types.ts';
import { ApiClient, ApiError, EMPTY_FILTERS, filtersActive, type EventFilters } from './api-client.ts';
import { DiffView } from './diff-view.ts';
import { EventDetailPane } from './event-detail.ts';
import { EventList } from './event-list.ts';
import { FilterBar } from './filter-bar.ts';
import { DeliveriesPanel, forwardMark, ForwardsView } from './forward-views.ts';
import type { LiveState } from './live-stream.ts';
import { ProvidersView } from './providers-view.ts';
import { SignIn } from './sign-in.ts';
import { clearToken, readToken, saveToken } from './token-store.ts';
import { useEventFeed } from './use-event-feed.ts';

type Route =
  | { view: 'events'; id: string | null }
  | { view: 'providers' }
  | { view: 'forwards' }
  | { view: 'diff'; a: string | null; b: string | null };

// Hash routes: the server serves one page, and a route never reaches the server (or its logs).
function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'providers') return { view: 'providers' };
  if (parts[0] === 'forwards') return { view: 'forwards' };
  if (parts[0] === 'diff') return { view: 'diff', a: parts[1] ?? null, b: parts[2] ?? null };
  return { view: 'events', id: parts[0] === 'events' ? (parts[1] ?? null) : null };
}

function useRoute(): [Route, (hash: string) => void] {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onHash = (): void => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const navigate = useCallback((hash: string) => {
    if (location.hash !== hash) location.hash = hash;
  }, []);
  return [route, navigate];
}

function LiveIndicator({ state, onRetry }: { state: LiveState; onRetry: () => void }): JSX.Element {
  // Re-render every second while offline, so the countdown moves.
  const [, setTick] = useState(0);
  useEffect(() => {
    if (state.kind !== 'offline') return undefined;
    const t = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [state]);
  const text =
    state.kind === 'live'
      ? 'Live'
      : state.kind === 'connecting'
        ? 'Connecting…'
        : state.kind === 'offline'
          ? `Offline — retrying in ${Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000))} s`
          : 'Stopped';
  return h(
    'div',
    {
      class: `live live-${state.kind}`,
      role: 'status',
      'aria-live': 'polite',
      'data-live': state.kind,
      title: state.kind === 'offline' ? state.reason : undefined,
    },
    h('span', { class: 'live-dot', 'aria-hidden': 'true' }),
    h('span', null, text),
    state.kind === 'offline'
      ? h('button', { type: 'button', class: 'btn btn-link', onClick: onRetry }, 'Retry now')
      : null,
  );
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

function Shell({ token, onSignOut }: { token: string; onSignOut: (notice: string | null) => void }): JSX.Element {
  const expired = useCallback(() => onSignOut('Your token was not accepted any more. Sign in again.'), [onSignOut]);
  const api = useMemo(() => new ApiClient(token, expired), [token, expired]);
  const [route, navigate] = useRoute();
  const [filters, setFilters] = useState<EventFilters>(EMPTY_FILTERS);
  const feed = useEventFeed(api, filters, expired);
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [providers, setProviders] = useState<ProviderStatus[] | null>(null);
  const [providersError, setProvidersError] = useState<string | null>(null);
  const [defaultTarget, setDefaultTarget] = useState<string | null>(null);
  const [serverTokenCaller, setServerTokenCaller] = useState<string | null>(null);
  // Whether any forward rule is configured: the detail then has a Forwarding tab.
  const [forwarding, setForwarding] = useState(false);
  // The detail's tab, kept here so that moving from event to event keeps it.
  const [tab, setTab] = useState('payload');
  const listRef = useRef<HTMLDivElement>(null);

  const openId = route.view === 'events' ? route.id : null;
  const filtered = filtersActive(filters);
  const clearFilters = useCallback(() => setFilters(() => EMPTY_FILTERS), []);

  useEffect(() => {
    api.config().then(
      (c) => {
        setDefaultTarget(c.replay.default_target);
        setServerTokenCaller(c.server_token_caller);
      },
      () => undefined,
    );
  }, [api]);
  useEffect(() => {
    api.forwards().then(
      (f) => setForwarding(f.rules.length > 0),
      () => undefined,
    );
  }, [api]);
  useEffect(() => {
    const load = (): void => {
      api.providers().then(
        (p) => {
          setProviders(p.providers);
          setProvidersError(null);
        },
        (err: unknown) => setProvidersError(err instanceof ApiError ? err.message : 'Could not load providers.'),
      );
    };
    load();
    // Queue connection states change on their own; refresh while the page is open.
    const t = setInterval(load, 10_000);
    return () => clearInterval(t);
  }, [api]);
  // Where j and k continue from: the row last selected, even after its highlight went away.
  const cursorRef = useRef<string | null>(null);
  useEffect(() => {
    if (openId) {
      setSelectedId(openId);
      cursorRef.current = openId;
    } else {
      // Closing the detail takes the row's highlight with it; the keyboard position stays.
      setSelectedId(null);
    }
  }, [openId]);

  const eventTypes = useMemo(() => [...new Set(feed.events.map((e) => e.event_type))].sort(), [feed.events]);
  const open = (id: string): void => navigate(`#/events/${id}`);
  const close = (): void => navigate('#/events');

  // The key handler is registered once and reads the latest state through refs updated during
  // render: a handler re-registered in an effect would act on a stale selection when keys come
  // faster than effects run (key repeat).
  const keyState = useRef({ route, events: feed.events, openId, loadMore: feed.loadMore, navigate });
  keyState.current = { route, events: feed.events, openId, loadMore: feed.loadMore, navigate };
  const selectedRef = useRef(selectedId);
  selectedRef.current = selectedId;

  useEffect(() => {
    const move = (delta: number): void => {
      const { events, loadMore } = keyState.current;
      const idx = events.findIndex((x) => x.id === (selectedRef.current ?? cursorRef.current));
      const next = events[Math.max(0, Math.min(events.length - 1, idx + delta))];
      if (!next) return;
      selectedRef.current = next.id;
      cursorRef.current = next.id;
      setSelectedId(next.id);
      if (delta > 0 && idx + delta >= events.length - 3) loadMore();
    };
    const onKey = (e: KeyboardEvent): void => {
      if (e.altKey || e.ctrlKey || e.metaKey || isTyping(e.target)) {
        if (e.key === 'Escape' && e.target instanceof HTMLElement && isTyping(e.target)) e.target.blur();
        return;
      }
      const state = keyState.current;
      if (state.route.view !== 'events') return;
      if (e.key === 'j' || e.key === 'ArrowDown') {
        move(1);
        e.preventDefault();
      } else if (e.key === 'k' || e.key === 'ArrowUp') {
        move(-1);
        e.preventDefault();
      } else if (e.key === 'Enter' && selectedRef.current) {
        state.navigate(`#/events/${selectedRef.current}`);
        e.preventDefault();
      } else if (e.key === 'Escape' && state.openId) {
        state.navigate('#/events');
      } else if (e.key === '/') {
        document.getElementById('f-q')?.focus();
        e.preventDefault();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const nav = (hash: string, label: string, active: boolean): JSX.Element =>
    h(
      'a',
      { href: hash, class: `nav-link${active ? ' is-active' : ''}`, 'aria-current': active ? 'page' : undefined },
      label,
    );

  return h(
    'div',
    { class: 'shell' },
    h(
      'header',
      { class: 'topbar' },
      h(
        'a',
        { class: 'brand', href: '#/events', 'aria-label': 'switchboard' },
        h('span', { class: 'brand-mark', 'aria-hidden': 'true' }),
        h('span', { class: 'brand-text' }, 'switchboard'),
      ),
      h(
        'nav',
        { class: 'nav', 'aria-label': 'Main' },
        nav('#/events', 'Events', route.view === 'events'),
        nav('#/providers', 'Providers', route.view === 'providers'),
        nav('#/forwards', 'Forwards', route.view === 'forwards'),
        nav(route.view === 'diff' ? location.hash : '#/diff', 'Diff', route.view === 'diff'),
      ),
      h('div', { class: 'spacer' }),
      h(LiveIndicator, { state: feed.live, onRetry: feed.retryLive }),
      h('button', { type: 'button', class: 'btn btn-small btn-ghost', onClick: () => onSignOut(null) }, 'Sign out'),
    ),
    route.view === 'providers'
      ? h(ProvidersView, { providers, error: providersError })
      : route.view === 'forwards'
        ? h(ForwardsView, { api })
        : route.view === 'diff'
          ? h(DiffView, { api, events: feed.events, a: route.a, b: route.b, navigate })
          : h(
              'main',
              { class: `events-layout${openId ? ' has-detail' : ''}` },
              h(
                'div',
                { class: 'list-pane', ref: listRef },
                h(FilterBar, { filters, providers: providers ?? [], eventTypes, onChange: setFilters }),
                h(
                  'div',
                  { class: 'list-status' },
                  h(
                    'span',
                    { class: 'list-count' },
                    feed.loading
                      ? 'Loading…'
                      : `${feed.events.length}${feed.hasMore ? '+' : ''} event${feed.events.length === 1 ? '' : 's'}${filtered ? ' matching' : ''}`,
                    // Out of the filter rows, so showing it never takes width from the dropdowns.
                    filtered
                      ? [
                          h('span', { 'aria-hidden': 'true' }, ' · '),
                          h(
                            'button',
                            {
                              type: 'button',
                              class: 'btn btn-link',
                              onClick: clearFilters,
                              'data-testid': 'clear-filters',
                            },
                            'Clear filters',
                          ),
                        ]
                      : null,
                  ),
                  h(
                    'span',
                    { class: 'kbd-hint' },
                    h('kbd', null, 'j'),
                    h('kbd', null, 'k'),
                    ' move · ',
                    h('kbd', null, 'Enter'),
                    ' open · ',
                    h('kbd', null, '/'),
                    ' search',
                  ),
                ),
                feed.error
                  ? h(
                      'p',
                      { class: 'form-error list-error', role: 'alert' },
                      feed.error,
                      ' ',
                      h('button', { type: 'button', class: 'btn btn-link', onClick: feed.reload }, 'Retry'),
                    )
                  : null,
                h(
                  'div',
                  { class: 'list-scroll' },
                  h(EventList, {
                    events: feed.events,
                    selectedId,
                    openId,
                    fresh: feed.fresh,
                    hasMore: feed.hasMore,
                    loading: feed.loading,
                    filtered,
                    onSelect: setSelectedId,
                    onOpen: open,
                    onLoadMore: feed.loadMore,
                    onClearFilters: clearFilters,
                    mark: forwardMark,
                  }),
                ),
              ),
              h(
                'div',
                { class: 'detail-pane', role: 'region', 'aria-label': 'Event detail' },
                openId
                  ? h(EventDetailPane, {
                      key: openId,
                      api,
                      id: openId,
                      defaultTarget,
                      serverTokenCaller,
                      tab,
                      onTab: setTab,
                      onClose: close,
                      extraTabs: forwarding
                        ? (event) => [
                            {
                              id: 'forwarding',
                              label: 'Forwarding',
                              render: () => h(DeliveriesPanel, { api, eventId: event.id }),
                            },
                          ]
                        : undefined,
                    })
                  : h(
                      'div',
                      { class: 'detail-empty' },
                      h('p', { class: 'empty-title' }, 'Select an event'),
                      h('p', { class: 'muted' }, 'Its verification, headers, payload and replay controls show here.'),
                    ),
              ),
            ),
  );
}

export function App(): JSX.Element {
  const [token, setToken] = useState<string | null>(() => readToken());
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((message: string | null) => {
    clearToken();
    setNotice(message);
    setToken(null);
  }, []);
  if (!token) {
    return h(SignIn, {
      notice,
      onSignedIn: (t: string) => {
        saveToken(t);
        setNotice(null);
        setToken(t);
      },
    });
  }
  return h(Shell, { token, onSignOut: signOut });
}
