import { h, type JSX } from 'preact';
import { useMemo } from 'preact/hooks';
import type { ApiEventSummary, EventDetail } from '../../../generated/types.ts';
import { EMPTY_FILTERS, familyOf, type ApiClient } from './api-client.ts';
import { canonicalJson, formatTime, parseJsonPayload } from './format.ts';
import { diffLines } from './line-diff.ts';
import { page, useLoaded } from './layout.ts';

// Events of the base's family offered as the other side.
const CANDIDATE_LIMIT = 100;

function comparableText(event: EventDetail): string {
  const json = parseJsonPayload(event.payload);
  return json ? canonicalJson(json.value) : event.payload.data;
}

/** What tells candidates apart in a picker: the type, the summary, then when and where from. */
export function candidateLabel(e: ApiEventSummary): string {
  return [e.event_type || '(no type)', e.summary, `${formatTime(e.received_at)} · ${e.provider} · ${e.id.slice(-8)}`]
    .filter((part) => part !== undefined && part !== '')
    .join(' — ');
}

interface DiffProps {
  api: ApiClient;
  events: readonly ApiEventSummary[];
  a: string | null;
  b: string | null;
  navigate: (hash: string) => void;
}

export function DiffView({ api, events, a, b, navigate }: DiffProps): JSX.Element {
  const { value: pair, error } = useLoaded(
    () => Promise.all([a ? api.getEvent(a) : null, b ? api.getEvent(b) : null]),
    [api, a, b],
    'Could not load the events.',
  );
  const [left, right] = pair ?? [null, null];

  // The other side comes from the base's whole family (pull_request.opened against
  // pull_request.closed), asked of the server so that events not loaded in the list count too.
  const family = familyOf(left?.event_type ?? events.find((e) => e.id === a)?.event_type ?? '');
  const { value: familyPage } = useLoaded(
    () =>
      family === ''
        ? Promise.resolve(null)
        : api.listEvents({ ...EMPTY_FILTERS, eventType: family }, undefined, CANDIDATE_LIMIT),
    [api, family],
    'Could not load events of this family.',
  );
  const candidates = (familyPage?.events ?? []).filter((e) => e.id !== a);
  // The base picker offers what the list has loaded, plus the chosen events if they are older.
  const bases = useMemo(() => {
    const known = new Map(events.map((e) => [e.id, e]));
    for (const e of familyPage?.events ?? []) if (!known.has(e.id)) known.set(e.id, e);
    return [...known.values()];
  }, [events, familyPage]);

  const lines = useMemo(
    () => (left && right ? diffLines(comparableText(left), comparableText(right)) : null),
    [left, right],
  );
  const added = lines?.filter((l) => l.kind === 'added').length ?? 0;
  const removed = lines?.filter((l) => l.kind === 'removed').length ?? 0;

  return page(
    'diff-title',
    'Compare payloads',
    'Two events of the same family (pull_request.opened against pull_request.closed, say), JSON keys sorted so only real differences show.',
    h(
      'div',
      { class: 'diff-pickers' },
      h('label', { for: 'diff-a', class: 'field-label' }, 'Base (−)'),
      h(
        'select',
        {
          id: 'diff-a',
          class: 'input',
          value: a ?? '',
          onChange: (e: Event) => navigate(`#/diff/${(e.currentTarget as HTMLSelectElement).value}`),
        },
        h('option', { value: '' }, 'Choose an event…'),
        bases.map((e) => h('option', { key: e.id, value: e.id }, candidateLabel(e))),
      ),
      h('label', { for: 'diff-b', class: 'field-label' }, 'Compared (+)'),
      h(
        'select',
        {
          id: 'diff-b',
          class: 'input',
          value: b ?? '',
          disabled: !a,
          onChange: (e: Event) => navigate(`#/diff/${a ?? ''}/${(e.currentTarget as HTMLSelectElement).value}`),
        },
        h(
          'option',
          { value: '' },
          candidates.length ? `Choose another ${family} event…` : `No other ${family || ''} event found`.trim(),
        ),
        candidates.map((e) => h('option', { key: e.id, value: e.id }, candidateLabel(e))),
      ),
    ),
    error ? h('p', { class: 'form-error', role: 'alert' }, error) : null,
    left && right && left.event_type !== right.event_type
      ? h('p', { class: 'notice' }, `Different types: ${left.event_type} vs ${right.event_type}.`)
      : null,
    lines
      ? h(
          'section',
          { class: 'card', 'aria-label': 'Payload diff' },
          h(
            'p',
            { class: 'diff-stats' },
            h('span', { class: 'diff-add' }, `+${added}`),
            ' ',
            h('span', { class: 'diff-del' }, `−${removed}`),
            added + removed === 0 ? ' · identical payloads' : '',
          ),
          h(
            'div',
            { class: 'diff', role: 'table', 'aria-label': 'Line diff' },
            lines.map((l, i) =>
              h(
                'div',
                { key: i, class: `diff-line diff-${l.kind}`, role: 'row' },
                h('span', { class: 'diff-num', role: 'cell' }, l.kind === 'added' ? '' : String(l.a)),
                h('span', { class: 'diff-num', role: 'cell' }, l.kind === 'removed' ? '' : String(l.b)),
                h(
                  'span',
                  { class: 'diff-sign', role: 'cell' },
                  l.kind === 'added' ? '+' : l.kind === 'removed' ? '−' : ' ',
                ),
                h('span', { class: 'diff-text', role: 'cell' }, l.text),
              ),
            ),
          ),
        )
      : a && b && !error
        ? h('p', { class: 'muted' }, 'Loading…')
        : null,
  );
}
