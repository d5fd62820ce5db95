import type { JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { EventDetail } from '../../../../generated/types.ts';
import type { ApiClient } from '../api-client.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { Icon } from '../components/icons.tsx';
import { JsonTree } from '../components/json-tree.tsx';
import { Toggle } from '../components/page.tsx';
import { extensionFor, formatBytes, parseJsonPayload } from '../format.ts';
import { errorText } from '../hooks/use-polled.ts';

// Beyond these sizes the tree (and then the raw text) would make the page sluggish; the full
// bytes stay one click away through Download.
const TREE_LIMIT = 512 * 1024;
const TEXT_LIMIT = 1024 * 1024;

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

function ViewSwitch({ view, onView }: { view: 'tree' | 'raw'; onView: (view: 'tree' | 'raw') => void }) {
  return (
    <div class="segmented" role="group" aria-label="Payload view">
      {(['tree', 'raw'] as const).map((option) => (
        <button
          type="button"
          class={view === option ? 'is-active' : ''}
          aria-pressed={view === option}
          onClick={() => onView(option)}
        >
          {option === 'tree' ? 'Tree' : 'Raw'}
        </button>
      ))}
    </div>
  );
}

function TruncatedNote({ event }: { event: EventDetail }): JSX.Element {
  return (
    <p class="notice" role="note" data-testid="payload-truncated">
      <strong>Truncated. </strong>
      {`Only the first ${formatBytes(event.payload_size)} of the ${formatBytes(event.received_size ?? 0)} ` +
        'that arrived were stored: a rejected delivery keeps at most record_rejected_max_bytes of its body.'}
    </p>
  );
}

/** The Payload tab: a JSON tree or the raw text (wrapped, pretty-printed), with Copy and Download. */
export function PayloadTab({ api, event }: { api: ApiClient; event: EventDetail }): JSX.Element {
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
  const openTo = (depth: number): void => {
    setOpenDepth(depth);
    setTreeKey(treeKey + 1);
  };

  return (
    <div class="tab-body">
      <div class="tab-toolbar">
        <span class="muted">{`${formatBytes(event.payload_size)} · ${event.content_type ?? 'no content type'}`}</span>
        <div class="toolbar">
          {json ? <ViewSwitch view={view} onView={setView} /> : null}
          {tree ? (
            <>
              <button type="button" class="btn btn-small btn-ghost" onClick={() => openTo(99)}>
                Expand all
              </button>
              <button type="button" class="btn btn-small btn-ghost" onClick={() => openTo(1)}>
                Collapse
              </button>
            </>
          ) : (
            <>
              {json ? <Toggle label="Pretty" on={pretty} set={setPretty} title="Pretty-print the JSON" /> : null}
              {binary ? null : <Toggle label="Wrap" on={wrap} set={setWrap} title="Wrap long lines" />}
            </>
          )}
          <CopyButton
            text={() => (tree ? JSON.stringify(json.value, null, 2) : text)}
            label={binary ? 'Copy payload as base64' : 'Copy payload'}
          />
          <button
            type="button"
            class="btn btn-small"
            onClick={() =>
              void download(api, event).catch((err: unknown) => setDownloadError(errorText(err, 'Download failed.')))
            }
          >
            <Icon name="download" />
            Download
          </button>
        </div>
      </div>
      {downloadError ? <p class="form-error">{downloadError}</p> : null}
      {event.payload_truncated === true ? <TruncatedNote event={event} /> : null}
      {binary ? <p class="hint">Binary payload (not UTF-8): shown as base64. Download gives the exact bytes.</p> : null}
      {tree ? (
        <div class="code-box">
          <JsonTree key={treeKey} value={json.value} openDepth={openDepth} />
        </div>
      ) : (
        <pre class={`code-box${binary || wrap ? ' wrap' : ''}`} aria-label="Raw payload">
          {shown}
        </pre>
      )}
    </div>
  );
}
