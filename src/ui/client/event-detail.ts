import { h, type JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { EventDetail } from '../../../generated/types.ts';
import { ApiError, type ApiClient } from './api-client.ts';
import { CopyButton } from './copy-button.ts';
import { extensionFor, formatBytes, formatFullTime, parseJsonPayload } from './format.ts';
import { Icon } from './icons.ts';
import { JsonTree } from './json-tree.ts';
import { card, table, useLoaded } from './layout.ts';
import { ReplayPanel } from './replay-panel.ts';
import { replayRule, TrustBadge, trustLook } from './trust-badge.ts';

// Beyond these sizes the tree (and then the raw text) would make the page sluggish; the full
// bytes stay one click away through Download.
const TREE_LIMIT = 512 * 1024;
const TEXT_LIMIT = 1024 * 1024;

interface DetailProps {
  api: ApiClient;
  id: string;
  defaultTarget: string | null;
  compareWith: string | null;
  onClose: () => void;
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
  const [downloadError, setDownloadError] = useState<string | null>(null);
  const binary = event.payload.encoding === 'base64';
  const text = event.payload.data;
  const shown =
    text.length > TEXT_LIMIT
      ? `${text.slice(0, TEXT_LIMIT)}\n… (truncated; download for the full ${formatBytes(event.payload_size)})`
      : text;

  return card(
    {
      titleId: 'payload-title',
      title: 'Payload',
      note: ` ${formatBytes(event.payload_size)} · ${event.content_type ?? 'no content type'}`,
      action: h(
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
        json && view === 'tree'
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
          : null,
        h(CopyButton, {
          text: () => (json && view === 'tree' ? JSON.stringify(json.value, null, 2) : text),
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
    },
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
    json && view === 'tree'
      ? h('div', { class: 'code-box' }, h(JsonTree, { key: treeKey, value: json.value, openDepth }))
      : h('pre', { class: `code-box${binary ? ' wrap' : ''}`, 'aria-label': 'Raw payload' }, shown),
  );
}

function Headers({ event }: { event: EventDetail }): JSX.Element {
  const entries = Object.entries(event.headers).sort(([a], [b]) => a.localeCompare(b));
  return card(
    {
      titleId: 'headers-title',
      title: 'Headers',
      note: ` ${entries.length}`,
      action: h(CopyButton, { text: () => JSON.stringify(event.headers, null, 2), label: 'Copy headers as JSON' }),
    },
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

export function EventDetailPane({ api, id, defaultTarget, compareWith, onClose }: DetailProps): JSX.Element {
  const { value: event, error } = useLoaded(() => api.getEvent(id), [api, id], 'Could not load the event.');

  if (error) return h('div', { class: 'detail-empty' }, h('p', { class: 'form-error', role: 'alert' }, error));
  if (!event) return h('div', { class: 'detail-empty' }, h('p', { class: 'muted' }, 'Loading event…'));
  const look = trustLook(event.trust_mode, event.verified);

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
                  title: 'Diff the payload against the previous event of this type',
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
      h(
        'div',
        { class: 'detail-sub' },
        h('span', { class: 'provider-chip' }, event.provider),
        h('span', { class: 'muted' }, formatFullTime(event.received_at)),
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
        null,
        h('dt', null, 'Event id'),
        h(
          'dd',
          { class: 'mono with-action' },
          h('span', { class: 'truncate-text' }, event.id),
          h(CopyButton, { text: () => event.id, label: 'Copy event id' }),
        ),
      ),
      h(
        'div',
        null,
        h('dt', null, 'Delivery id'),
        h(
          'dd',
          { class: 'mono truncate-text', title: event.external_id ?? '' },
          event.external_id ?? h('span', { class: 'muted' }, 'none'),
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
    h(ReplayPanel, { api, eventId: event.id, defaultTarget, unsignedRule: replayRule(event) }),
    h(Payload, { api, event }),
    h(Headers, { event }),
  );
}
