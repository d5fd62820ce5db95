import type { JSX } from 'preact';
import { useContext } from 'preact/hooks';
import { CliCommand } from '../cli-command.ts';

/** An empty list says why: nothing matches the filters, or nothing has arrived yet (and how to send one). */
export function EmptyList({
  filtered,
  onClearFilters,
}: {
  filtered: boolean;
  onClearFilters: () => void;
}): JSX.Element {
  const cli = useContext(CliCommand);
  if (filtered) {
    return (
      <div class="empty" data-testid="empty-filtered">
        <p class="empty-title">No events match these filters</p>
        <p>Events that arrive and match will show up here live.</p>
        <button type="button" class="btn" onClick={onClearFilters}>
          Clear filters
        </button>
      </div>
    );
  }
  return (
    <div class="empty" data-testid="empty-none">
      <p class="empty-title">No events yet</p>
      <p>
        Send a webhook to one of your provider routes, or run <code>{`${cli} trigger <provider>`}</code> where your
        switchboard.yaml is. It will appear here within a second.
      </p>
    </div>
  );
}
