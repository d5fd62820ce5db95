/**
 * Keyboard navigation of the event list: j/k (or the arrows) move the selection, Enter opens it,
 * Escape closes the detail, / goes to the search box. Keys typed into a field stay there.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiEventSummary } from '../../../../generated/types.ts';
import { EVENTS_HASH, eventHash, type Navigate } from './use-route.ts';

export interface ListKeysInput {
  /** Keys act only while the list is on screen. */
  active: boolean;
  events: readonly ApiEventSummary[];
  /** The event open in the detail, if any. */
  openId: string | null;
  /** Called when the selection comes near the end of what is loaded. */
  loadMore: () => void;
  navigate: Navigate;
}

// Start paging this many rows before the last one, so j never waits at the bottom.
const PAGE_AHEAD = 3;

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

/** The selected row (highlighted, announced), and a way to select one by clicking it. */
export function useListKeys(input: ListKeysInput): [string | null, (id: string) => void] {
  const [selectedId, setSelectedId] = useState<string | null>(null);
  // Where j and k continue from: the row last selected, even after its highlight went away.
  const cursorRef = useRef<string | null>(null);
  useEffect(() => {
    if (input.openId) {
      setSelectedId(input.openId);
      cursorRef.current = input.openId;
    } else {
      // Closing the detail takes the row's highlight with it; the keyboard position stays.
      setSelectedId(null);
    }
  }, [input.openId]);

  // The key handler is registered once and reads the latest state through refs updated during
  // render: a handler re-registered in an effect would act on a stale selection when keys come
  // faster than effects run (key repeat).
  const latest = useRef(input);
  latest.current = input;
  const selectedRef = useRef(selectedId);
  selectedRef.current = selectedId;

  useEffect(() => {
    const move = (delta: number): void => {
      const { events, loadMore } = latest.current;
      const idx = events.findIndex((x) => x.id === (selectedRef.current ?? cursorRef.current));
      const next = events[Math.max(0, Math.min(events.length - 1, idx + delta))];
      if (!next) return;
      selectedRef.current = next.id;
      cursorRef.current = next.id;
      setSelectedId(next.id);
      if (delta > 0 && idx + delta >= events.length - PAGE_AHEAD) loadMore();
    };
    const onKey = (e: KeyboardEvent): void => {
      if (e.altKey || e.ctrlKey || e.metaKey || isTyping(e.target)) {
        if (e.key === 'Escape' && e.target instanceof HTMLElement && isTyping(e.target)) e.target.blur();
        return;
      }
      const state = latest.current;
      if (!state.active) return;
      if (e.key === 'j' || e.key === 'ArrowDown') {
        move(1);
        e.preventDefault();
      } else if (e.key === 'k' || e.key === 'ArrowUp') {
        move(-1);
        e.preventDefault();
      } else if (e.key === 'Enter' && selectedRef.current) {
        state.navigate(eventHash(selectedRef.current));
        e.preventDefault();
      } else if (e.key === 'Escape' && state.openId) {
        state.navigate(EVENTS_HASH);
      } else if (e.key === '/') {
        document.getElementById('f-q')?.focus();
        e.preventDefault();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  return [selectedId, setSelectedId];
}
