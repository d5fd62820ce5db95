import type { JSX } from 'preact';
import type { Route } from '../hooks/use-route.ts';
import type { LiveState } from '../live-stream.ts';
import { LiveIndicator } from './live-indicator.tsx';

function NavLink({ hash, label, active }: { hash: string; label: string; active: boolean }): JSX.Element {
  return (
    <a href={hash} class={`nav-link${active ? ' is-active' : ''}`} aria-current={active ? 'page' : undefined}>
      {label}
    </a>
  );
}

export function TopBar({
  route,
  live,
  onRetryLive,
  onSignOut,
}: {
  route: Route;
  live: LiveState;
  onRetryLive: () => void;
  onSignOut: () => void;
}): JSX.Element {
  return (
    <header class="topbar">
      <a class="brand" href="#/events" aria-label="switchboard">
        <span class="brand-mark" aria-hidden="true" />
        <span class="brand-text">switchboard</span>
      </a>
      <nav class="nav" aria-label="Main">
        <NavLink hash="#/events" label="Events" active={route.view === 'events'} />
        <NavLink hash="#/providers" label="Providers" active={route.view === 'providers'} />
        <NavLink hash="#/forwards" label="Forwards" active={route.view === 'forwards'} />
        {/* The Diff link keeps the pair being compared. */}
        <NavLink hash={route.view === 'diff' ? location.hash : '#/diff'} label="Diff" active={route.view === 'diff'} />
      </nav>
      <div class="spacer" />
      <LiveIndicator state={live} onRetry={onRetryLive} />
      <button type="button" class="btn btn-small btn-ghost" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}
