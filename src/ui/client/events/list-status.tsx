import type { JSX } from 'preact';

/** The line above the list: how many events (and whether filtered), Clear filters, and the keys. */
export function ListStatus({
  loading,
  count,
  hasMore,
  filtered,
  onClearFilters,
}: {
  loading: boolean;
  count: number;
  hasMore: boolean;
  filtered: boolean;
  onClearFilters: () => void;
}): JSX.Element {
  return (
    <div class="list-status">
      <span class="list-count">
        {loading
          ? 'Loading…'
          : `${count}${hasMore ? '+' : ''} event${count === 1 ? '' : 's'}${filtered ? ' matching' : ''}`}
        {/* Out of the filter rows, so showing it never takes width from the dropdowns. */}
        {filtered ? (
          <>
            <span aria-hidden="true"> · </span>
            <button type="button" class="btn btn-link" onClick={onClearFilters} data-testid="clear-filters">
              Clear filters
            </button>
          </>
        ) : null}
      </span>
      <span class="kbd-hint">
        <kbd>j</kbd>
        <kbd>k</kbd> move · <kbd>Enter</kbd> open · <kbd>/</kbd> search
      </span>
    </div>
  );
}
