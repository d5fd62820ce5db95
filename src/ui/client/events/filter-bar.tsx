import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ProviderStatus } from '../../../../generated/types.ts';
import { EMPTY_FILTERS, type EventFilters } from '../api-client.ts';
import { toLocalInput } from '../format.ts';

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

const valueOf = (e: Event): string => (e.currentTarget as HTMLInputElement | HTMLSelectElement).value;

function CustomRange({
  filters,
  set,
}: {
  filters: EventFilters;
  set: (patch: Partial<EventFilters>) => void;
}): JSX.Element {
  return (
    <div class="filter-row">
      <RangeEnd id="f-from" label="From" value={filters.from} onSet={(from) => set({ from })} />
      <RangeEnd id="f-to" label="To" value={filters.to} onSet={(to) => set({ to })} />
    </div>
  );
}

/** One end of a custom range: a local date and time, labelled beside it. */
function RangeEnd(props: { id: string; label: string; value: string; onSet: (value: string) => void }): JSX.Element {
  return (
    <>
      <label for={props.id} class="inline-label">
        {props.label}
      </label>
      <input
        id={props.id}
        type="datetime-local"
        class="input grow"
        value={props.value}
        onChange={(e) => props.onSet(valueOf(e))}
      />
    </>
  );
}

type SetFilters = (patch: Partial<EventFilters>) => void;

/** A filter's select, named for screen readers by a label only they see. */
function LabelledSelect(props: {
  id: string;
  label: string;
  grow?: boolean;
  value: string;
  onChoose: (value: string) => void;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <>
      <label class="sr-only" for={props.id}>
        {props.label}
      </label>
      <select
        id={props.id}
        class={props.grow === true ? 'input grow' : 'input'}
        value={props.value}
        onChange={(e) => props.onChoose(valueOf(e))}
      >
        {props.children}
      </select>
    </>
  );
}

/** Provider and event type: the type is typed (with suggestions) and applied once typing pauses. */
function SourceRow(props: {
  filters: EventFilters;
  set: SetFilters;
  providers: readonly ProviderStatus[];
  eventTypes: readonly string[];
  type: string;
  onType: (type: string) => void;
}): JSX.Element {
  return (
    <div class="filter-row">
      {/* Shape repeat by intent: each filter's select is the one LabelledSelect, given its own props. */}
      <LabelledSelect
        id="f-provider"
        label="Provider"
        grow
        value={props.filters.provider}
        onChoose={(provider) => props.set({ provider })}
      >
        <option value="">All providers</option>
        {props.providers.map((p) => (
          <option key={p.name} value={p.name}>
            {p.name}
          </option>
        ))}
      </LabelledSelect>
      <label class="sr-only" for="f-type">
        Event type
      </label>
      <input
        id="f-type"
        class="input grow"
        placeholder="Event type"
        list="f-type-list"
        value={props.type}
        onInput={(e) => props.onType(valueOf(e))}
      />
      <datalist id="f-type-list">
        {props.eventTypes.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
    </div>
  );
}

/** Trust (verified or not) and the time range. */
function TrustTimeRow(props: {
  filters: EventFilters;
  set: SetFilters;
  range: string;
  onRange: (range: string) => void;
}): JSX.Element {
  return (
    <div class="filter-row">
      <LabelledSelect
        id="f-verified"
        label="Verification"
        value={props.filters.verified}
        onChoose={(verified) => props.set({ verified: verified as EventFilters['verified'] })}
      >
        <option value="">Any trust</option>
        <option value="true">Verified only</option>
        <option value="false">Unverified only</option>
      </LabelledSelect>
      <LabelledSelect id="f-range" label="Time range" value={props.range} onChoose={props.onRange}>
        <option value="">Any time</option>
        {RANGES.map((r) => (
          <option key={r.value} value={r.value}>
            {r.label}
          </option>
        ))}
        <option value="custom">Custom range…</option>
      </LabelledSelect>
    </div>
  );
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

  return (
    <form class="filters" role="search" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
      <div class="filter-row">
        <label class="sr-only" for="f-q">
          Search payloads
        </label>
        <input
          id="f-q"
          type="search"
          class="input grow"
          placeholder="Search payloads…  ( / )"
          value={q}
          onInput={(e) => setQ(valueOf(e))}
        />
      </div>
      {/* Shape repeat by intent: props handed on by name, alike in shape to other views' (no logic to share). */}
      <SourceRow
        filters={filters}
        set={set}
        providers={providers}
        eventTypes={eventTypes}
        type={type}
        onType={setType}
      />
      <TrustTimeRow filters={filters} set={set} range={range} onRange={chooseRange} />
      {range === 'custom' ? <CustomRange filters={filters} set={set} /> : null}
    </form>
  );
}
