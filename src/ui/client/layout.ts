/** The building blocks several views share: a page, a table, a toggle, and loading what a view shows. */
import { h, type ComponentChildren, type JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api-client.ts';

/** A top-level page: its title (which labels it) and a line saying what it is for. */
export function page(titleId: string, title: string, lead: string, ...body: ComponentChildren[]): JSX.Element {
  return h(
    'main',
    { class: 'page', 'aria-labelledby': titleId },
    h('h1', { id: titleId, class: 'page-title' }, title),
    h('p', { class: 'muted page-lead' }, lead),
    ...body,
  );
}

/** A table with an optional header row of column names. */
export function table(
  attributes: { class: string; 'aria-label': string },
  columns: readonly string[] | null,
  rows: ComponentChildren,
): JSX.Element {
  return h(
    'table',
    attributes,
    columns === null ? null : h('thead', null, h('tr', null, ...columns.map((column) => h('th', null, column)))),
    h('tbody', null, rows),
  );
}

/**
 * What `load` resolves to, or the error to show instead; null while it loads. A load that a newer
 * one (or unmounting) overtook is ignored, so a slow answer never replaces a newer view.
 */
export function useLoaded<T>(
  load: () => Promise<T>,
  dependencies: readonly unknown[],
  failure: string,
): { value: T | null; error: string | null } {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    setValue(null);
    setError(null);
    load()
      .then((loaded) => current && setValue(() => loaded))
      .catch((err: unknown) => current && setError(err instanceof ApiError ? err.message : failure));
    return () => {
      current = false;
    };
    // The caller names what the load depends on, as with useEffect itself.
  }, dependencies);
  return { value, error };
}

/** A button that stays pressed while its option is on (aria-pressed), e.g. Wrap or Pretty. */
export function toggle(label: string, on: boolean, set: (on: boolean) => void, title: string): JSX.Element {
  return h(
    'button',
    {
      type: 'button',
      class: `btn btn-small toggle${on ? ' is-on' : ''}`,
      'aria-pressed': on ? 'true' : 'false',
      title,
      onClick: () => set(!on),
    },
    label,
  );
}
