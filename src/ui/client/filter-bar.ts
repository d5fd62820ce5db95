import { h, type JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ProviderStatus } from '../../../generated/types.ts';
import { EMPTY_FILTERS, type EventFilters } from './api-client.ts';
import { toLocalInput } from './format.ts';

const RANGES: readonly { value: string; label: string; minutes: number }[] = [
  { value: '15m', label: 'Last 15 minutes', minutes: 15 },
  { value: '1h', label: 'Last hour', minutes: 60 },
  { value: '24h', label: 'Last 24 hours', minutes: 24 * 60 },
  { value: '7d', label: 'Last 7 days', minutes: 7 * 24 * 60 },
];

interface FilterBarProps {
  filters: EventFilters;
  providers: readonly ProviderStatus[];
  eventTypes: readonly string[];
  /** Takes an updater, so two quick changes never build on the same stale filters. */
  onChange: (update: (current: EventFilters) => EventFilters) => void;
}

function useDebounced(value: string, onSettle: (v: string) => void, ms: number): void {
  useEffect(() => {
    const t = setTimeout(() => onSettle(value), ms);
    return () => clearTimeout(t);
    // onSettle changes every render; only the value should restart the timer.
  }, [value]);
}

export function FilterBar({ filters, providers, eventTypes, onChange }: FilterBarProps): JSX.Element {
  const [q, setQ] = useState(filters.q);
  const [type, setType] = useState(filters.eventType);
  const [range, setRange] = useState<string>(filters.from || filters.to ? 'custom' : '');
  const set = (patch: Partial<EventFilters>): void => onChange((current) => ({ ...current, ...patch }));

  useDebounced(q, (v) => onChange((current) => (v === current.q ? current : { ...current, q: v })), 300);
  useDebounced(
    type,
    (v) => onChange((current) => (v === current.eventType ? current : { ...current, eventType: v })),
    300,
  );
  // Keep the text boxes and the range in step when filters are cleared from outside.
  useEffect(() => setQ(filters.q), [filters.q]);
  useEffect(() => setType(filters.eventType), [filters.eventType]);
  // Clearing hands back EMPTY_FILTERS itself.
  useEffect(() => {
    if (filters === EMPTY_FILTERS) setRange('');
  }, [filters]);

  const chooseRange = (value: string): void => {
    setRange(value);
    const preset = RANGES.find((r) => r.value === value);
    if (preset) set({ from: toLocalInput(new Date(Date.now() - preset.minutes * 60_000)), to: '' });
    else if (value === '') set({ from: '', to: '' });
  };

  return h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter events', onSubmit: (e: Event) => e.preventDefault() },
    h(
      'div',
      { class: 'filter-row' },
      h('label', { class: 'sr-only', for: 'f-q' }, 'Search payloads'),
      h('input', {
        id: 'f-q',
        type: 'search',
        class: 'input grow',
        placeholder: 'Search payloads…  ( / )',
        value: q,
        onInput: (e: Event) => setQ((e.currentTarget as HTMLInputElement).value),
      }),
    ),
    h(
      'div',
      { class: 'filter-row' },
      h('label', { class: 'sr-only', for: 'f-provider' }, 'Provider'),
      h(
        'select',
        {
          id: 'f-provider',
          class: 'input grow',
          value: filters.provider,
          onChange: (e: Event) => set({ provider: (e.currentTarget as HTMLSelectElement).value }),
        },
        h('option', { value: '' }, 'All providers'),
        providers.map((p) => h('option', { key: p.name, value: p.name }, p.name)),
      ),
      h('label', { class: 'sr-only', for: 'f-type' }, 'Event type'),
      h('input', {
        id: 'f-type',
        class: 'input grow',
        placeholder: 'Event type',
        list: 'f-type-list',
        value: type,
        onInput: (e: Event) => setType((e.currentTarget as HTMLInputElement).value),
      }),
      h(
        'datalist',
        { id: 'f-type-list' },
        eventTypes.map((t) => h('option', { key: t, value: t })),
      ),
    ),
    h(
      'div',
      { class: 'filter-row' },
      h('label', { class: 'sr-only', for: 'f-verified' }, 'Verification'),
      h(
        'select',
        {
          id: 'f-verified',
          class: 'input',
          value: filters.verified,
          onChange: (e: Event) =>
            set({ verified: (e.currentTarget as HTMLSelectElement).value as EventFilters['verified'] }),
        },
        h('option', { value: '' }, 'Any trust'),
        h('option', { value: 'true' }, 'Verified only'),
        h('option', { value: 'false' }, 'Unverified only'),
      ),
      h('label', { class: 'sr-only', for: 'f-range' }, 'Time range'),
      h(
        'select',
        {
          id: 'f-range',
          class: 'input',
          value: range,
          onChange: (e: Event) => chooseRange((e.currentTarget as HTMLSelectElement).value),
        },
        h('option', { value: '' }, 'Any time'),
        RANGES.map((r) => h('option', { key: r.value, value: r.value }, r.label)),
        h('option', { value: 'custom' }, 'Custom range…'),
      ),
    ),
    range === 'custom'
      ? h(
          'div',
          { class: 'filter-row' },
          h('label', { for: 'f-from', class: 'inline-label' }, 'From'),
          h('input', {
            id: 'f-from',
            type: 'datetime-local',
            class: 'input grow',
            value: filters.from,
            onChange: (e: Event) => set({ from: (e.currentTarget as HTMLInputElement).value }),
          }),
          h('label', { for: 'f-to', class: 'inline-label' }, 'To'),
          h('input', {
            id: 'f-to',
            type: 'datetime-local',
            class: 'input grow',
            value: filters.to,
            onChange: (e: Event) => set({ to: (e.currentTarget as HTMLInputElement).value }),
          }),
        )
      : null,
  );
}
