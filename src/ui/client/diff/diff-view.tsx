import type { JSX } from 'preact';
import { useMemo } from 'preact/hooks';
import type { ApiEventSummary, EventDetail } from '../../../../generated/types.ts';
import { EMPTY_FILTERS, familyOf, type ApiClient } from '../api-client.ts';
import { ErrorAlert } from '../components/load-status.tsx';
import { Page } from '../components/page.tsx';
import { canonicalJson, parseJsonPayload } from '../format.ts';
import { useLoaded } from '../hooks/use-polled.ts';
import type { Navigate } from '../hooks/use-route.ts';
import { diffLines, type DiffLine } from '../line-diff.ts';
import { candidateLabel } from './candidate-label.ts';

// Events of the base's family offered as the other side.
const CANDIDATE_LIMIT = 100;

function comparableText(event: EventDetail): string {
  const json = parseJsonPayload(event.payload);
  return json ? canonicalJson(json.value) : event.payload.data;
}

interface DiffProps {
  api: ApiClient;
  events: readonly ApiEventSummary[];
  a: string | null;
  b: string | null;
  navigate: Navigate;
}

const SIGN: Readonly<Record<DiffLine['kind'], string>> = { added: '+', removed: '−', same: ' ' };

function LineDiff({ lines }: { lines: readonly DiffLine[] }): JSX.Element {
  const added = lines.filter((l) => l.kind === 'added').length;
  const removed = lines.filter((l) => l.kind === 'removed').length;
  return (
    <section class="card" aria-label="Payload diff">
      <p class="diff-stats">
        <span class="diff-add">{`+${added}`}</span> <span class="diff-del">{`−${removed}`}</span>
        {added + removed === 0 ? ' · identical payloads' : ''}
      </p>
      <div class="diff" role="table" aria-label="Line diff">
        {lines.map((l, i) => (
          <div key={i} class={`diff-line diff-${l.kind}`} role="row">
            <span class="diff-num" role="cell">
              {l.kind === 'added' ? '' : String(l.a)}
            </span>
            <span class="diff-num" role="cell">
              {l.kind === 'removed' ? '' : String(l.b)}
            </span>
            <span class="diff-sign" role="cell">
              {SIGN[l.kind]}
            </span>
            <span class="diff-text" role="cell">
              {l.text}
            </span>
          </div>
        ))}
      </div>
    </section>
  );
}

/** The second picker's first line: what to do, never "none found" before anything was looked for. */
function comparedPrompt(a: string | null, family: string, count: number, loaded: boolean): string {
  if (!a) return 'Choose a base event first';
  if (count > 0) return `Choose another ${family} event…`;
  return loaded ? `No other ${family} event yet`.replace('  ', ' ') : 'Loading…';
}

/** The page before a base is chosen: what the pickers are for and what to do. */
function DiffEmpty(): JSX.Element {
  return (
    <div class="empty" data-testid="diff-empty">
      <p class="empty-title">Choose two events to compare</p>
      <p>
        Pick a base event above; the second list then offers the other events of its family. Or open an event in the
        list and press <strong>Compare</strong>.
      </p>
    </div>
  );
}

/** The two pickers: a base event, then another of its family. */
function DiffPickers(props: {
  a: string | null;
  b: string | null;
  family: string;
  bases: readonly ApiEventSummary[];
  candidates: readonly ApiEventSummary[];
  /** Whether the base's family has been asked for yet. */
  familyLoaded: boolean;
  navigate: Navigate;
}): JSX.Element {
  const { a, b, family, bases, candidates, familyLoaded, navigate } = props;
  return (
    <div class="diff-pickers">
      <label for="diff-a" class="field-label">
        Base (−)
      </label>
      <select id="diff-a" class="input" value={a ?? ''} onChange={(e) => navigate(`#/diff/${e.currentTarget.value}`)}>
        <option value="">Choose an event…</option>
        {bases.map((e) => (
          <option key={e.id} value={e.id}>
            {candidateLabel(e)}
          </option>
        ))}
      </select>
      <label for="diff-b" class="field-label">
        Compared (+)
      </label>
      <select
        id="diff-b"
        class="input"
        value={b ?? ''}
        disabled={!a}
        onChange={(e) => navigate(`#/diff/${a ?? ''}/${e.currentTarget.value}`)}
      >
        <option value="">{comparedPrompt(a, family, candidates.length, familyLoaded)}</option>
        {candidates.map((e) => (
          <option key={e.id} value={e.id}>
            {candidateLabel(e)}
          </option>
        ))}
      </select>
    </div>
  );
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
  const { value: familyPage, error: familyError } = useLoaded(
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

  return (
    <Page
      titleId="diff-title"
      title="Compare payloads"
      lead="Two events of the same family (pull_request.opened against pull_request.closed, say), JSON keys sorted so only real differences show."
    >
      {/* Shape repeat by intent: props handed on by name, alike in shape to other views' (no logic to share). */}
      <DiffPickers
        a={a}
        b={b}
        family={family}
        bases={bases}
        candidates={candidates}
        familyLoaded={family === '' ? pair !== null : familyPage !== null || familyError !== null}
        navigate={navigate}
      />
      <ErrorAlert error={error} />
      {a ? null : <DiffEmpty />}
      {left && right && left.event_type !== right.event_type ? (
        <p class="notice">{`Different types: ${left.event_type} vs ${right.event_type}.`}</p>
      ) : null}
      {lines ? <LineDiff lines={lines} /> : a && b && !error ? <p class="muted">Loading…</p> : null}
    </Page>
  );
}
