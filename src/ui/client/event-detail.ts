import { h, type ComponentChildren, type JSX } from 'preact';
import { useMemo, useRef, useState } from 'preact/hooks';
import type { EventDetail, EventRequest } from '../../../generated/types.ts';
import { ApiError, EMPTY_FILTERS, familyOf, type ApiClient } from './api-client.ts';
import { CopyButton } from './copy-button.ts';
import { extensionFor, formatBytes, formatZonedTime, parseJsonPayload } from './format.ts';
import { Icon } from './icons.ts';
import { JsonTree } from './json-tree.ts';
import { table, toggle, useLoaded } from './layout.ts';
import { ReplayPanel } from './replay-panel.ts';
import { replayRule, TrustBadge, trustLook } from './trust-badge.ts';

// Beyond these sizes the tree (and then the raw text) would make the page sluggish; the full
// bytes stay one click away through Download.
const TREE_LIMIT = 512 * 1024;
const TEXT_LIMIT = 1024 * 1024;
// UUIDv7 ids share their leading (time) characters; the last ones tell events apart.
const ID_TAIL = 8;

/** A tab of the detail: Payload, Headers and Request are built in; other views may add theirs. */
export interface DetailTab {
  id: string;
  label: string;
  /** Shown after the label, muted (a count, say). */
  note?: string;
  render: () => ComponentChildren;
}

interface DetailProps {
  api: ApiClient;
  id: string;
  defaultTarget: string | null;
  /** The caller name of the server's own token, shown as "server token" in the replay history. */
  serverTokenCaller: string | null;
  /** The chosen tab, kept by the caller so that moving between events keeps it. */
  tab: string;
  onTab: (tab: string) => void;
  onClose: () => void;
  /** More tabs after the built-in ones (forwarding's delivery state, for instance). */
  extraTabs?: (event: EventDetail) => DetailTab[];
}

async function download(api: ApiClient, event: EventDetail): Promise<void> {
  // A plain link cannot carry the bearer header, so fetch the bytes and hand the browser a blob.
  const blob = await api.getRaw(event.id);
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = `${event.id}.${extensionFor(event.content_type)}`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function Payload({ api, event }: { api: ApiClient; event: EventDetail }): JSX.Element {
  const json = useMemo(
    () => (event.payload.data.length <= TREE_LIMIT ? parseJsonPayload(event.payload) : undefined),
    [event],
  );
  const [view, setView] = useState<'tree' | 'raw'>(json ? 'tree' : 'raw');
  const [openDepth, setOpenDepth] = useState(2);
  const [treeKey, setTreeKey] = useState(0);
  const [wrap, setWrap] = useState(false);
  const [pretty, setPretty] = useState(false);
  const [downloadError, setDownloadError] = useState<string | null>(null);
  const binary = event.payload.encoding === 'base64';
  const raw = event.payload.data;
  const text = json && pretty ? JSON.stringify(json.value, null, 2) : raw;
  const shown =
    text.length > TEXT_LIMIT
      ? `${text.slice(0, TEXT_LIMIT)}\n… (truncated; download for the full ${formatBytes(event.payload_size)})`
      : text;
  const tree = json !== undefined && view === 'tree';

  return h(
    'div',
    { class: 'tab-body' },
    h(
      'div',
      { class: 'tab-toolbar' },
      h('span', { class: 'muted' }, `${formatBytes(event.payload_size)} · ${event.content_type ?? 'no content type'}`),
      h(
        'div',
        { class: 'toolbar' },
        json
          ? h(
              'div',
              { class: 'segmented', role: 'group', 'aria-label': 'Payload view' },
              (['tree', 'raw'] as const).map((option) =>
                h(
                  'button',
                  {
                    type: 'button',
                    class: view === option ? 'is-active' : '',
                    'aria-pressed': view === option,
                    onClick: () => setView(option),
                  },
                  option === 'tree' ? 'Tree' : 'Raw',
                ),
              ),
            )
          : null,
        tree
          ? (
              [
                [99, 'Expand all'],
                [1, 'Collapse'],
              ] as const
            ).map(([depth, label]) =>
              h(
                'button',
                {
                  type: 'button',
                  class: 'btn btn-small btn-ghost',
                  onClick: () => {
                    setOpenDepth(depth);
                    setTreeKey(treeKey + 1);
                  },
                },
                label,
              ),
            )
          : [
              json ? toggle('Pretty', pretty, setPretty, 'Pretty-print the JSON') : null,
              binary ? null : toggle('Wrap', wrap, setWrap, 'Wrap long lines'),
            ],
        h(CopyButton, {
          text: () => (tree ? JSON.stringify(json.value, null, 2) : text),
          label: binary ? 'Copy payload as base64' : 'Copy payload',
        }),
        h(
          'button',
          {
            type: 'button',
            class: 'btn btn-small',
            onClick: () =>
              download(api, event).catch((err: unknown) =>
                setDownloadError(err instanceof ApiError ? err.message : 'Download failed.'),
              ),
          },
          h(Icon, { name: 'download' }),
          'Download',
        ),
      ),
    ),
    downloadError ? h('p', { class: 'form-error' }, downloadError) : null,
    event.payload_truncated === true
      ? h(
          'p',
          { class: 'notice', role: 'note', 'data-testid': 'payload-truncated' },
          h('strong', null, 'Truncated. '),
          `Only the first ${formatBytes(event.payload_size)} of the ${formatBytes(event.received_size ?? 0)} ` +
            'that arrived were stored: a rejected delivery keeps at most record_rejected_max_bytes of its body.',
        )
      : null,
    binary
      ? h('p', { class: 'hint' }, 'Binary payload (not UTF-8): shown as base64. Download gives the exact bytes.')
      : null,
    tree
      ? h('div', { class: 'code-box' }, h(JsonTree, { key: treeKey, value: json.value, openDepth }))
      : h('pre', { class: `code-box${binary || wrap ? ' wrap' : ''}`, 'aria-label': 'Raw payload' }, shown),
  );
}

function Headers({ event }: { event: EventDetail }): JSX.Element {
  const entries = Object.entries(event.headers).sort(([a], [b]) => a.localeCompare(b));
  return h(
    'div',
    { class: 'tab-body' },
    h(
      'div',
      { class: 'tab-toolbar' },
      h('span', { class: 'muted' }, `${entries.length} header${entries.length === 1 ? '' : 's'}, secrets redacted`),
      h(CopyButton, { text: () => JSON.stringify(event.headers, null, 2), label: 'Copy headers as JSON' }),
    ),
    entries.length === 0
      ? h('p', { class: 'muted' }, 'No headers stored (queue message).')
      : table(
          { class: 'table headers-table', 'aria-label': 'Request headers' },
          null,
          entries.map(([name, value]) =>
            h(
              'tr',
              { key: name },
              h('th', { scope: 'row', class: 'mono' }, name),
              h(
                'td',
                { class: `mono${value === '[redacted]' ? ' muted' : ''}` },
                Array.isArray(value) ? value.join('\n') : (value ?? ''),
              ),
            ),
          ),
        ),
  );
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  401: 'Unauthorized',
  503: 'Service Unavailable',
};

/** What the answer meant for the sender, in a sentence. */
function answerMeaning(status: number): string {
  if (status >= 200 && status < 300) return 'Stored, and the sender was told so.';
  if (status === 401) {
    return 'Refused: the signature or token check failed. The sender was told 401; the delivery was kept for inspection only.';
  }
  if (status === 503) {
    return 'The sender was told to retry (the commit was not confirmed in time); the event was stored after all, so expect the retry as a duplicate.';
  }
  return `The sender was answered ${status}.`;
}

function decodeQueryPart(part: string): string {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    return part;
  }
}

function RequestFacts({ event, request }: { event: EventDetail; request: EventRequest }): JSX.Element {
  const params = request.query === '' ? [] : request.query.split('&').filter((p) => p !== '');
  const tone = request.response_status < 300 ? 'good' : request.response_status < 500 ? 'bad' : 'warn';
  return h(
    'div',
    { class: 'tab-body' },
    h(
      'p',
      { class: 'request-line mono', 'data-testid': 'request-line' },
      h('strong', null, request.method),
      ' ',
      request.path,
      request.query === '' ? null : h('span', { class: 'request-query' }, `?${request.query}`),
    ),
    h(
      'dl',
      { class: 'facts request-facts' },
      h('dt', null, 'Answered'),
      h(
        'dd',
        { 'data-testid': 'request-answer' },
        h(
          'span',
          { class: `pill pill-${tone}` },
          `${request.response_status} ${STATUS_TEXT[request.response_status] ?? ''}`.trim(),
        ),
        ' ',
        h('span', { class: 'muted' }, answerMeaning(request.response_status)),
      ),
      h('dt', null, 'Method'),
      h('dd', { class: 'mono' }, request.method),
      h('dt', null, 'Path'),
      h('dd', { class: 'mono' }, request.path),
      h('dt', null, 'Query'),
      h(
        'dd',
        null,
        params.length === 0
          ? h('span', { class: 'muted' }, 'none')
          : table(
              { class: 'table query-table', 'aria-label': 'Query parameters' },
              null,
              params.map((part, i) => {
                const eq = part.indexOf('=');
                const name = decodeQueryPart(eq === -1 ? part : part.slice(0, eq));
                const value = eq === -1 ? '' : decodeQueryPart(part.slice(eq + 1));
                return h(
                  'tr',
                  { key: i },
                  h('th', { scope: 'row', class: 'mono' }, name),
                  h('td', { class: `mono${value === '[redacted]' ? ' muted' : ''}` }, value),
                );
              }),
            ),
      ),
      h('dt', null, 'From'),
      h('dd', { class: 'mono' }, event.source_ip ?? h('span', { class: 'muted' }, 'unknown')),
      h('dt', null, 'Content type'),
      h('dd', { class: 'mono' }, event.content_type ?? h('span', { class: 'muted' }, 'none')),
    ),
    h(
      'p',
      { class: 'hint' },
      'Values of query parameters whose names look like secrets (token, key, secret, signature, code, …) are replaced by [redacted] before anything is stored.',
    ),
  );
}

function RequestTab({ event }: { event: EventDetail }): JSX.Element {
  if (event.request !== undefined) return h(RequestFacts, { event, request: event.request });
  return h(
    'div',
    { class: 'tab-body' },
    h(
      'p',
      { class: 'muted', 'data-testid': 'request-none' },
      event.trust_mode === 'queue'
        ? 'Read from a Redis queue: a queue message arrives without an HTTP request.'
        : 'Not recorded: this event was stored before switchboard kept the original request.',
    ),
  );
}

/** WAI-ARIA tabs: one tab stop, arrow keys move between tabs, the panel is labelled by its tab. */
function Tabs({ tabs, selected, onSelect }: { tabs: DetailTab[]; selected: string; onSelect: (id: string) => void }) {
  const current = tabs.find((t) => t.id === selected) ?? tabs[0];
  const list = useRef<HTMLDivElement>(null);
  const move = (delta: number): void => {
    const index = tabs.findIndex((t) => t.id === current?.id);
    const next = tabs[(index + delta + tabs.length) % tabs.length];
    if (!next) return;
    onSelect(next.id);
    list.current?.querySelector<HTMLButtonElement>(`#tab-${next.id}`)?.focus();
  };
  return h(
    'section',
    { class: 'card tabs-card', 'aria-label': 'Event content' },
    h(
      'div',
      {
        class: 'tabs',
        role: 'tablist',
        'aria-label': 'Event content',
        ref: list,
        onKeyDown: (e: KeyboardEvent) => {
          if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
            move(e.key === 'ArrowRight' ? 1 : -1);
            e.preventDefault();
            e.stopPropagation();
          }
        },
      },
      tabs.map((tab) =>
        h(
          'button',
          {
            key: tab.id,
            id: `tab-${tab.id}`,
            type: 'button',
            role: 'tab',
            class: `tab${tab.id === current?.id ? ' is-active' : ''}`,
            'aria-selected': tab.id === current?.id ? 'true' : 'false',
            'aria-controls': `tabpanel-${tab.id}`,
            tabIndex: tab.id === current?.id ? 0 : -1,
            onClick: () => onSelect(tab.id),
          },
          tab.label,
          tab.note === undefined ? null : h('span', { class: 'tab-note' }, tab.note),
        ),
      ),
    ),
    current
      ? h(
          'div',
          {
            id: `tabpanel-${current.id}`,
            role: 'tabpanel',
            class: 'tab-panel',
            'aria-labelledby': `tab-${current.id}`,
            'data-tab': current.id,
          },
          current.render(),
        )
      : null,
  );
}

/**
 * The event id with its last characters always in view: UUIDv7 ids begin with the time, so
 * events received close together share their first characters, and on a narrow screen the start
 * gives way (ending in …) before the tail does.
 */
function EventIdText({ id }: { id: string }): JSX.Element {
  return h(
    'span',
    { class: 'id-text', title: id, 'data-testid': 'event-id' },
    h('span', { class: 'id-head' }, id.slice(0, -ID_TAIL)),
    h('span', { class: 'id-tail' }, id.slice(-ID_TAIL)),
  );
}

/**
 * The event of the same family received just before this one (else the newest other one), for
 * "Compare": pull_request.closed against the pull_request.opened that came before it.
 */
async function compareCandidate(api: ApiClient, event: EventDetail): Promise<string | null> {
  const family = familyOf(event.event_type);
  if (family === '') return null;
  const filters = { ...EMPTY_FILTERS, eventType: family };
  const [older] = (await api.listEvents(filters, undefined, 1, event.received_at)).events;
  if (older !== undefined) return older.id;
  return (await api.listEvents(filters, undefined, 2)).events.find((e) => e.id !== event.id)?.id ?? null;
}

function useCompareCandidate(api: ApiClient, event: EventDetail | null): string | null {
  const { value } = useLoaded(
    () => (event === null ? Promise.resolve(null) : compareCandidate(api, event)),
    [api, event?.id],
    'Could not load events to compare with.',
  );
  return value;
}

export function EventDetailPane(props: DetailProps): JSX.Element {
  const { api, id, defaultTarget, serverTokenCaller, onClose } = props;
  const { value: event, error } = useLoaded(() => api.getEvent(id), [api, id], 'Could not load the event.');
  const compareWith = useCompareCandidate(api, event);

  if (error) return h('div', { class: 'detail-empty' }, h('p', { class: 'form-error', role: 'alert' }, error));
  if (!event) return h('div', { class: 'detail-empty' }, h('p', { class: 'muted' }, 'Loading event…'));
  const look = trustLook(event.trust_mode, event.verified);
  const time = formatZonedTime(event.received_at);
  const headerCount = Object.keys(event.headers).length;
  const tabs: DetailTab[] = [
    { id: 'payload', label: 'Payload', render: () => h(Payload, { api, event }) },
    { id: 'headers', label: 'Headers', note: String(headerCount), render: () => h(Headers, { event }) },
    { id: 'request', label: 'Request', render: () => h(RequestTab, { event }) },
    ...(props.extraTabs?.(event) ?? []),
  ];

  return h(
    'article',
    { class: 'detail', 'aria-labelledby': 'detail-title' },
    h(
      'header',
      { class: 'detail-head' },
      h(
        'div',
        { class: 'detail-title-row' },
        h('h2', { id: 'detail-title', class: 'detail-title' }, event.event_type || '(no type)'),
        h(
          'div',
          { class: 'toolbar' },
          compareWith
            ? h(
                'a',
                {
                  class: 'btn btn-small',
                  href: `#/diff/${compareWith}/${event.id}`,
                  title: `Diff the payload against another ${familyOf(event.event_type)} event`,
                  'data-testid': 'compare',
                },
                h(Icon, { name: 'diff' }),
                'Compare',
              )
            : null,
          h(
            'button',
            { type: 'button', class: 'btn btn-small btn-ghost', onClick: onClose, 'aria-label': 'Close detail (Esc)' },
            h(Icon, { name: 'x' }),
          ),
        ),
      ),
      event.summary === undefined
        ? null
        : h('p', { class: 'detail-summary', 'data-testid': 'detail-summary' }, event.summary),
      h(
        'div',
        { class: 'detail-sub' },
        h('span', { class: 'provider-chip' }, event.provider),
        h(
          'time',
          { class: 'detail-time muted', dateTime: event.received_at, title: time.utc, 'data-testid': 'detail-time' },
          time.local,
        ),
      ),
    ),
    h(
      'section',
      { class: `trust-panel trust-${look.level}`, 'aria-label': 'Verification', 'data-testid': 'trust-panel' },
      h(TrustBadge, { trustMode: event.trust_mode, verified: event.verified, size: 'large' }),
      h('p', { class: 'trust-explain' }, look.explain),
      h(
        'dl',
        { class: 'trust-facts' },
        h('dt', null, 'Trust mode'),
        h('dd', null, h('code', null, event.trust_mode)),
        h('dt', null, 'Check'),
        h('dd', { 'data-testid': 'verify-detail' }, event.verify_detail),
      ),
    ),
    h(
      'dl',
      { class: 'meta-strip', 'aria-label': 'Event facts' },
      h(
        'div',
        { class: 'meta-id' },
        h('dt', null, 'Event id'),
        h(
          'dd',
          { class: 'mono with-action' },
          h(EventIdText, { id: event.id }),
          h(CopyButton, { text: () => event.id, label: 'Copy event id' }),
        ),
      ),
      h(
        'div',
        { class: 'meta-delivery' },
        h('dt', null, 'Delivery id'),
        h(
          'dd',
          { class: 'mono with-action' },
          event.external_id === null
            ? h('span', { class: 'muted' }, 'none')
            : [
                h(
                  'span',
                  { class: 'truncate-text', title: event.external_id, 'data-testid': 'delivery-id' },
                  event.external_id,
                ),
                h(CopyButton, { text: () => event.external_id ?? '', label: 'Copy delivery id' }),
              ],
        ),
      ),
      h(
        'div',
        null,
        h('dt', null, 'Source'),
        h('dd', { class: 'mono' }, event.source_ip ?? h('span', { class: 'muted' }, 'queue')),
      ),
      h(
        'div',
        null,
        h('dt', null, 'Size'),
        h(
          'dd',
          event.payload_truncated === true ? { class: 'stacked' } : null,
          formatBytes(event.payload_size),
          event.payload_truncated === true
            ? h('div', { class: 'muted' }, `of ${formatBytes(event.received_size ?? 0)} received`)
            : null,
        ),
      ),
    ),
    h(Tabs, { tabs, selected: props.tab, onSelect: props.onTab }),
    h(ReplayPanel, { api, eventId: event.id, defaultTarget, serverTokenCaller, unsignedRule: replayRule(event) }),
  );
}
