import { useCallback, useEffect, useState } from 'preact/hooks';

export type Route =
  | { view: 'events'; id: string | null }
  | { view: 'providers' }
  | { view: 'forwards' }
  | { view: 'diff'; a: string | null; b: string | null };

export type Navigate = (hash: string) => void;

/** Hash routes: the server serves one page, and a route never reaches the server (or its logs). */
function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'providers') return { view: 'providers' };
  if (parts[0] === 'forwards') return { view: 'forwards' };
  if (parts[0] === 'diff') return { view: 'diff', a: parts[1] ?? null, b: parts[2] ?? null };
  return { view: 'events', id: parts[0] === 'events' ? (parts[1] ?? null) : null };
}

export const eventHash = (id: string): string => `#/events/${id}`;
export const EVENTS_HASH = '#/events';

/** The current route, and a way to go elsewhere (which the back button undoes). */
export function useRoute(): [Route, Navigate] {
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
