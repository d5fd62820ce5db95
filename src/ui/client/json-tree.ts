import { h, type ComponentChildren, type JSX } from 'preact';
import { useState } from 'preact/hooks';

// Long arrays and objects show this many children until the user asks for the rest.
const CHILD_PAGE = 200;

function Scalar({ value }: { value: unknown }): JSX.Element {
  if (value === null) return h('span', { class: 'j-null' }, 'null');
  if (typeof value === 'string') return h('span', { class: 'j-str' }, JSON.stringify(value));
  if (typeof value === 'number') return h('span', { class: 'j-num' }, String(value));
  if (typeof value === 'boolean') return h('span', { class: 'j-bool' }, String(value));
  // Only undefined gets here from parsed JSON; anything else is shown as JSON would write it.
  return h('span', null, value === undefined ? 'undefined' : JSON.stringify(value));
}

function Key({ name }: { name: string | number | undefined }): JSX.Element | null {
  if (name === undefined) return null;
  return h(
    'span',
    { class: typeof name === 'number' ? 'j-index' : 'j-key' },
    typeof name === 'number' ? `${name}: ` : `${JSON.stringify(name)}: `,
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
  const comma = last ? null : h('span', { class: 'j-punct' }, ',');
  if (value === null || typeof value !== 'object') {
    return h('div', { class: 'j-line' }, h(Key, { name }), h(Scalar, { value }), comma);
  }
  const isArray = Array.isArray(value);
  const entries: [string | number, unknown][] = isArray
    ? (value as unknown[]).map((v, i): [number, unknown] => [i, v])
    : Object.entries(value as Record<string, unknown>);
  const [open, close] = isArray ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    return h('div', { class: 'j-line' }, h(Key, { name }), h('span', { class: 'j-punct' }, `${open}${close}`), comma);
  }
  const count = `${entries.length} ${isArray ? (entries.length === 1 ? 'item' : 'items') : entries.length === 1 ? 'key' : 'keys'}`;
  const children: ComponentChildren[] = entries
    .slice(0, shown)
    .map(([k, v], i) =>
      h(JsonNode, { key: k, name: k, value: v, depth: depth + 1, openDepth, last: i === entries.length - 1 }),
    );
  if (entries.length > shown) {
    children.push(
      h(
        'button',
        { type: 'button', class: 'btn btn-link j-more', onClick: () => setShown(shown + CHILD_PAGE * 5) },
        `show ${Math.min(entries.length - shown, CHILD_PAGE * 5)} more of ${entries.length - shown}`,
      ),
    );
  }
  return h(
    'details',
    { class: 'j-node', open: depth < openDepth },
    h(
      'summary',
      { class: 'j-line' },
      h(Key, { name }),
      h('span', { class: 'j-punct' }, open),
      h('span', { class: 'j-count' }, ` ${count} `),
      h('span', { class: 'j-punct j-closed-only' }, close),
      h('span', { class: 'j-closed-only' }, comma),
    ),
    h('div', { class: 'j-children' }, children),
    h('div', { class: 'j-line' }, h('span', { class: 'j-punct' }, close), comma),
  );
}

/** A collapsible view of a JSON value; native <details> elements do the collapsing, keyboard included. */
export function JsonTree({ value, openDepth }: { value: unknown; openDepth: number }): JSX.Element {
  return h(
    'div',
    { class: 'json-tree', role: 'group', 'aria-label': 'Payload as a JSON tree' },
    h(JsonNode, { name: undefined, value, depth: 0, openDepth, last: true }),
  );
}
