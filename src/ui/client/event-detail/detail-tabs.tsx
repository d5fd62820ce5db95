import type { ComponentChildren, JSX } from 'preact';
import { useRef } from 'preact/hooks';

/** A tab of the detail: Payload, Headers and Request are built in; other views may add theirs. */
export interface DetailTab {
  id: string;
  label: string;
  /** Shown after the label, muted (a count, say). */
  note?: string;
  render: () => ComponentChildren;
}

/** WAI-ARIA tabs: one tab stop, arrow keys move between tabs, the panel is labelled by its tab. */
export function DetailTabs({
  tabs,
  selected,
  onSelect,
}: {
  tabs: DetailTab[];
  selected: string;
  onSelect: (id: string) => void;
}): JSX.Element {
  const current = tabs.find((t) => t.id === selected) ?? tabs[0];
  const list = useRef<HTMLDivElement>(null);
  const move = (delta: number): void => {
    const index = tabs.findIndex((t) => t.id === current?.id);
    const next = tabs[(index + delta + tabs.length) % tabs.length];
    if (!next) return;
    onSelect(next.id);
    list.current?.querySelector<HTMLButtonElement>(`#tab-${next.id}`)?.focus();
  };
  const onKeyDown = (e: KeyboardEvent): void => {
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      move(e.key === 'ArrowRight' ? 1 : -1);
      e.preventDefault();
      e.stopPropagation();
    }
  };
  return (
    <section class="card tabs-card" aria-label="Event content">
      <div class="tabs" role="tablist" aria-label="Event content" ref={list} onKeyDown={onKeyDown}>
        {tabs.map((tab) => (
          <button
            key={tab.id}
            id={`tab-${tab.id}`}
            type="button"
            role="tab"
            class={`tab${tab.id === current?.id ? ' is-active' : ''}`}
            aria-selected={tab.id === current?.id ? 'true' : 'false'}
            aria-controls={`tabpanel-${tab.id}`}
            tabIndex={tab.id === current?.id ? 0 : -1}
            onClick={() => onSelect(tab.id)}
          >
            {tab.label}
            {tab.note === undefined ? null : <span class="tab-note">{tab.note}</span>}
          </button>
        ))}
      </div>
      {current ? (
        <div
          id={`tabpanel-${current.id}`}
          role="tabpanel"
          class="tab-panel"
          aria-labelledby={`tab-${current.id}`}
          data-tab={current.id}
        >
          {current.render()}
        </div>
      ) : null}
    </section>
  );
}
