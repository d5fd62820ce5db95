import { useCallback, useEffect, useRef, useState, type MutableRef } from 'preact/hooks';
import type { ApiEventSummary } from '../../../../generated/types.ts';
import type { ApiClient, EventFilters } from '../api-client.ts';
import { liveEventMatches, mergeEvents } from '../event-filter.ts';
import { errorText } from '../hooks/use-polled.ts';
import { LiveStream, type LiveState } from '../live-stream.ts';

const PAGE = 50;
// How long a freshly arrived row stays highlighted.
const FRESH_MS = 2500;
// Live events that only the server can match (full-text search) re-read the list's head, at most this often.
const HEAD_REFRESH_MS = 250;

export interface EventFeed {
  events: ApiEventSummary[];
  hasMore: boolean;
  loading: boolean;
  error: string | null;
  live: LiveState;
  /** Ids that arrived live in the last moments, for a highlight. */
  fresh: ReadonlySet<string>;
  readonly loadMore: () => void;
  readonly reload: () => void;
  readonly retryLive: () => void;
}

const describe = (err: unknown): string => errorText(err, 'Could not load events.');

interface EventPages {
  events: ApiEventSummary[];
  addEvents: (incoming: readonly ApiEventSummary[]) => void;
  hasMore: boolean;
  loading: boolean;
  error: string | null;
  filtersRef: MutableRef<EventFilters>;
  /** Reads the first page again: replacing the list (new filters), or merging into it. */
  loadHead: (replace: boolean) => Promise<void>;
  loadMore: () => void;
}

/** The list for the current filters, page by page; the live stream learns the newest id it holds. */
function useEventPages(api: ApiClient, filters: EventFilters, stream: MutableRef<LiveStream | null>): EventPages {
  const [events, setEvents] = useState<ApiEventSummary[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const filtersRef = useRef(filters);
  filtersRef.current = filters;
  // Answers to an older filter set are dropped: only the newest request may write the list.
  const generation = useRef(0);
  const loadingMore = useRef(false);

  const loadHead = useCallback(
    async (replace: boolean): Promise<void> => {
      const gen = replace ? ++generation.current : generation.current;
      if (replace) {
        setLoading(true);
        setError(null);
      }
      try {
        const page = await api.listEvents(filtersRef.current, undefined, PAGE);
        if (gen !== generation.current) return;
        if (replace) {
          setEvents(page.events);
          setCursor(page.next_cursor);
        } else {
          setEvents((current) => mergeEvents(current, page.events));
        }
        stream.current?.noteNewest(page.events[0]?.id);
        setError(null);
      } catch (err) {
        if (gen === generation.current) setError(describe(err));
      } finally {
        if (gen === generation.current && replace) setLoading(false);
      }
    },
    [api],
  );

  // Filters changed: the list starts over.
  useEffect(() => {
    void loadHead(true);
  }, [filters, loadHead]);

  const loadMore = useCallback(() => {
    if (cursor === undefined || loadingMore.current) return;
    const gen = generation.current;
    loadingMore.current = true;
    api
      .listEvents(filtersRef.current, cursor, PAGE)
      .then((page) => {
        if (gen !== generation.current) return;
        setEvents((current) => mergeEvents(current, page.events));
        setCursor(page.next_cursor);
      })
      .catch((err: unknown) => {
        if (gen === generation.current) setError(describe(err));
      })
      .finally(() => {
        loadingMore.current = false;
      });
  }, [api, cursor]);

  const addEvents = useCallback(
    (incoming: readonly ApiEventSummary[]) => setEvents((current) => mergeEvents(current, incoming)),
    [],
  );
  return { events, addEvents, hasMore: cursor !== undefined, loading, error, filtersRef, loadHead, loadMore };
}

/** Ids that arrived live in the last moments, each highlighted for FRESH_MS. */
function useFreshIds(): [ReadonlySet<string>, (id: string) => void] {
  const [fresh, setFresh] = useState<ReadonlySet<string>>(new Set());
  const markFresh = useCallback((id: string) => {
    setFresh((s) => new Set(s).add(id));
    setTimeout(
      () =>
        setFresh((s) => {
          const next = new Set(s);
          next.delete(id);
          return next;
        }),
      FRESH_MS,
    );
  }, []);
  return [fresh, markFresh];
}

/**
 * The list of events for the current filters, kept current by the live stream. The stream is
 * global (it is never filtered server-side); each live event is matched against the filters
 * here, except for full-text search, which only the server can answer: then the head of the
 * list is re-read.
 */
export function useEventFeed(api: ApiClient, filters: EventFilters, onUnauthorized: () => void): EventFeed {
  const streamRef = useRef<LiveStream | null>(null);
  const pages = useEventPages(api, filters, streamRef);
  const { loadHead, addEvents, filtersRef } = pages;
  const [fresh, markFresh] = useFreshIds();
  const [live, setLive] = useState<LiveState>({ kind: 'connecting' });
  const headTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const scheduleHeadRefresh = useCallback(() => {
    clearTimeout(headTimer.current);
    headTimer.current = setTimeout(() => void loadHead(false), HEAD_REFRESH_MS);
  }, [loadHead]);

  useEffect(() => {
    const stream = new LiveStream(api.authHeader, {
      onEvent: (summary) => {
        const verdict = liveEventMatches(filtersRef.current, summary);
        if (verdict === 'unknown') {
          scheduleHeadRefresh();
          return;
        }
        if (!verdict) return;
        addEvents([summary]);
        markFresh(summary.id);
      },
      onReset: () => void loadHead(true),
      onOpen: (resumed) => {
        // Without Last-Event-ID the server could not fill the gap: read the head of the list again.
        if (!resumed) scheduleHeadRefresh();
      },
      onState: setLive,
      onUnauthorized,
    });
    streamRef.current = stream;
    stream.start(undefined);
    return () => {
      stream.stop();
      streamRef.current = null;
      clearTimeout(headTimer.current);
    };
  }, [api, loadHead, scheduleHeadRefresh, onUnauthorized]);

  return {
    events: pages.events,
    hasMore: pages.hasMore,
    loading: pages.loading,
    error: pages.error,
    live,
    fresh,
    loadMore: pages.loadMore,
    reload: () => void loadHead(true),
    retryLive: () => streamRef.current?.retryNow(),
  };
}
