/** The building blocks several views share: a page, a table, a toggle. */
import type { ComponentChildren, JSX } from 'preact';

/** A top-level page: its title (which labels it) and a line saying what it is for. */
export function Page({
  titleId,
  title,
  lead,
  children,
}: {
  titleId: string;
  title: string;
  lead: string;
  children?: ComponentChildren;
}): JSX.Element {
  return (
    <main class="page" aria-labelledby={titleId}>
      <h1 id={titleId} class="page-title">
        {title}
      </h1>
      <p class="muted page-lead">{lead}</p>
      {children}
    </main>
  );
}

/** A table with an optional header row of column names. */
export function Table({
  class: className,
  label,
  columns,
  children,
}: {
  class: string;
  label: string;
  columns?: readonly string[];
  children?: ComponentChildren;
}): JSX.Element {
  return (
    <table class={className} aria-label={label}>
      {columns === undefined ? null : (
        <thead>
          <tr>
            {columns.map((column) => (
              <th>{column}</th>
            ))}
          </tr>
        </thead>
      )}
      <tbody>{children}</tbody>
    </table>
  );
}

/** A button that stays pressed while its option is on (aria-pressed), e.g. Wrap or Pretty. */
export function Toggle({
  label,
  on,
  set,
  title,
}: {
  label: string;
  on: boolean;
  set: (on: boolean) => void;
  title: string;
}): JSX.Element {
  return (
    <button
      type="button"
      class={`btn btn-small toggle${on ? ' is-on' : ''}`}
      aria-pressed={on ? 'true' : 'false'}
      title={title}
      onClick={() => set(!on)}
    >
      {label}
    </button>
  );
}
