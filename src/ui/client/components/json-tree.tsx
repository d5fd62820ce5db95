import type { JSX } from 'preact';
import { useState } from 'preact/hooks';

// Long arrays and objects show this many children until the user asks for the rest.
const CHILD_PAGE = 200;

function Scalar({ value }: { value: unknown }): JSX.Element {
  if (value === null) return <span class="j-null">null</span>;
  if (typeof value === 'string') return <span class="j-str">{JSON.stringify(value)}</span>;
  if (typeof value === 'number') return <span class="j-num">{String(value)}</span>;
  if (typeof value === 'boolean') return <span class="j-bool">{String(value)}</span>;
  // Only undefined gets here from parsed JSON; anything else is shown as JSON would write it.
  return <span>{value === undefined ? 'undefined' : JSON.stringify(value)}</span>;
}

function Key({ name }: { name: string | number | undefined }): JSX.Element | null {
  if (name === undefined) return null;
  return typeof name === 'number' ? (
    <span class="j-index">{`${name}: `}</span>
  ) : (
    <span class="j-key">{`${JSON.stringify(name)}: `}</span>
  );
}

interface NodeProps {
  name: string | number | undefined;
  value: unknown;
  depth: number;
  openDepth: number;
  last: boolean;
}

function JsonNode({ name, value, depth, openDepth, last }: NodeProps): JSX.Element {
  const [shown, setShown] = useState(CHILD_PAGE);
  const comma = last ? null : <span class="j-punct">,</span>;
  if (value === null || typeof value !== 'object') {
    return (
      <div class="j-line">
        <Key name={name} />
        <Scalar value={value} />
        {comma}
      </div>
    );
  }
  const isArray = Array.isArray(value);
  const entries: [string | number, unknown][] = isArray
    ? (value as unknown[]).map((v, i): [number, unknown] => [i, v])
    : Object.entries(value as Record<string, unknown>);
  const [open, close] = isArray ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    return (
      <div class="j-line">
        <Key name={name} />
        <span class="j-punct">{`${open}${close}`}</span>
        {comma}
      </div>
    );
  }
  const noun = isArray ? (entries.length === 1 ? 'item' : 'items') : entries.length === 1 ? 'key' : 'keys';
  const more = entries.length - shown;
  return (
    <details class="j-node" open={depth < openDepth}>
      <summary class="j-line">
        <Key name={name} />
        <span class="j-punct">{open}</span>
        <span class="j-count">{` ${entries.length} ${noun} `}</span>
        <span class="j-punct j-closed-only">{close}</span>
        <span class="j-closed-only">{comma}</span>
      </summary>
      <div class="j-children">
        {entries.slice(0, shown).map(([k, v], i) => (
          <JsonNode
            key={k}
            name={k}
            value={v}
            depth={depth + 1}
            openDepth={openDepth}
            last={i === entries.length - 1}
          />
        ))}
        {more > 0 ? (
          <button type="button" class="btn btn-link j-more" onClick={() => setShown(shown + CHILD_PAGE * 5)}>
            {`show ${Math.min(more, CHILD_PAGE * 5)} more of ${more}`}
          </button>
        ) : null}
      </div>
      <div class="j-line">
        <span class="j-punct">{close}</span>
        {comma}
      </div>
    </details>
  );
}

/** A collapsible view of a JSON value; native <details> elements do the collapsing, keyboard included. */
export function JsonTree({ value, openDepth }: { value: unknown; openDepth: number }): JSX.Element {
  return (
    <div class="json-tree" role="group" aria-label="Payload as a JSON tree">
      <JsonNode name={undefined} value={value} depth={0} openDepth={openDepth} last />
    </div>
  );
}
