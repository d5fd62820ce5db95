/**
 * One line from a payload that tells an event from others of its type: three `push` rows that
 * differ only by size and time become `octo/api · main · Fix the login redirect`. Computed once,
 * at ingest, from the JSON that identify() already parsed (LazyBody), so it costs a few property
 * reads per delivery and never a second parse.
 *
 * Each preset picks the fields its sender puts first; anything else gets the generic line, the
 * first few text fields of the payload. Nothing here throws on odd input: a payload is whatever a
 * sender (or a forger) sent.
 */
import { EVENT_SUMMARY_LIMITS } from '../../generated/constants.ts';
import { looksLikeCredential } from '../shared/credential-names.ts';
import { headerValue } from './headers.ts';
import { isRecord } from './identify.ts';
import type { HeaderBag, Preset } from './preset-types.ts';

export type Summarize = Preset['summarize'];

const SEPARATOR = ' · ';
// Control characters, and the line and paragraph separators, would break the one line.
const LINE_BREAKING = /[\p{Cc}\u2028\u2029]+/gu;
const SPACES = /\s{2,}/g;

/** A value worth showing as text: a non-empty string or a finite number; anything else is null. */
export function textOf(value: unknown): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (typeof value !== 'string') return null;
  const text = value.replace(LINE_BREAKING, ' ').replace(SPACES, ' ').trim();
  return text === '' ? null : text;
}

/** The first line of a text (a commit message's subject, say). */
export function firstLine(value: unknown): string | null {
  return typeof value === 'string' ? textOf(value.split(/\r?\n/, 1)[0]) : null;
}

/** The value at a path of object keys, or undefined when a step is missing. */
export function at(doc: unknown, ...path: readonly string[]): unknown {
  let current = doc;
  for (const key of path) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * The parts that are present, joined on one line and cut to the contract's limit in characters
 * (code points, as the schema counts them), ending in … when cut. Null when nothing is left.
 */
export function summaryLine(parts: readonly unknown[]): string | null {
  const texts = parts.map(textOf).filter((part): part is string => part !== null);
  if (texts.length === 0) return null;
  const line = texts.join(SEPARATOR);
  const max = EVENT_SUMMARY_LIMITS.maxLength;
  // Most lines are far shorter than the limit in UTF-16 units too, which bounds code points.
  if (line.length <= max) return line;
  const chars = Array.from(line);
  return chars.length <= max
    ? line
    : `${chars
        .slice(0, max - 1)
        .join('')
        .trimEnd()}…`;
}

// Fields that name the kind of document rather than tell one from another.
const SKIPPED_KEYS = /^(type|object|api_version|livemode)$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;
const LONG_VALUE = 80;
const GENERIC_FIELDS = 3;
// Enough to find a few fields in any payload, few enough that a huge one costs nothing.
const GENERIC_VISITS = 200;

/**
 * The first few text fields of a JSON document, `name: value`, breadth first (top-level fields,
 * then those one object down, named with their path), leaving out the event type and times (the
 * list shows both already) and values too long for one line. A field whose name looks like a
 * credential (`password`, `api_key`, Discord's interaction `token`) is never shown, nor anything
 * inside an object so named: the line goes wherever the list goes (the UI, /api, an agent's
 * context), further than the payload.
 */
export function genericSummary(json: unknown, eventType?: string): string | null {
  if (Array.isArray(json)) return summaryLine([`${json.length} item${json.length === 1 ? '' : 's'}`]);
  if (!isRecord(json)) return null;
  const picked: string[] = [];
  let visits = 0;
  let level: Array<[string, Record<string, unknown>]> = [['', json]];
  for (let depth = 0; depth < 3 && level.length > 0 && picked.length < GENERIC_FIELDS; depth += 1) {
    const next: Array<[string, Record<string, unknown>]> = [];
    for (const [prefix, object] of level) {
      for (const [key, value] of Object.entries(object)) {
        if (++visits > GENERIC_VISITS || picked.length >= GENERIC_FIELDS) break;
        if (looksLikeCredential(key)) continue;
        if (isRecord(value)) {
          next.push([`${prefix}${key}.`, value]);
          continue;
        }
        if (SKIPPED_KEYS.test(key)) continue;
        const text = textOf(value);
        if (text === null || text === eventType || text.length > LONG_VALUE || ISO_TIME.test(text)) continue;
        picked.push(`${prefix}${key}: ${text}`);
      }
    }
    level = next;
  }
  return summaryLine(picked);
}

// One part of a generic line: the field's path, then ": " and its value (genericSummary).
const GENERIC_PART = /^([^\s:]+): /;

/**
 * A stored line without the parts that show a credential-like field: generic lines stored before
 * genericSummary left such fields out may still hold one (`password: hunter2`), and every surface
 * reads the line through here. Only a line made wholly of `path: value` parts is looked at, so a
 * preset's line whose text has a colon (a commit subject `auth: fix login`) is left as it is.
 * A line whose every part goes is null.
 */
export function withoutCredentialFields(line: string | null): string | null {
  if (line === null || !line.includes(': ')) return line;
  const parts = line.split(SEPARATOR);
  const paths = parts.map((part) => GENERIC_PART.exec(part)?.[1]);
  if (paths.includes(undefined) || !paths.some((path) => path !== undefined && looksLikeCredential(path))) return line;
  const kept = parts.filter((_, index) => !looksLikeCredential(paths[index] ?? ''));
  return kept.length === 0 ? null : kept.join(SEPARATOR);
}

/** A generic preset's summary: the first few text fields, leaving out the one that is the event type. */
export const summarizeGeneric: Summarize = (body) => {
  const json = body.json;
  return genericSummary(json, isRecord(json) ? (textOf(json['type']) ?? undefined) : undefined);
};

/** `refs/heads/main` → `main`, `refs/tags/v1.2` → `tag v1.2`; anything else as it is. */
export function shortRef(ref: unknown): string | null {
  const text = textOf(ref);
  if (text === null) return null;
  if (text.startsWith('refs/heads/')) return text.slice('refs/heads/'.length);
  if (text.startsWith('refs/tags/')) return `tag ${text.slice('refs/tags/'.length)}`;
  return text;
}

/** `#42` from a number (or numeric text); null otherwise. */
export function numbered(value: unknown): string | null {
  const text = textOf(value);
  return text !== null && /^\d+$/.test(text) ? `#${text}` : null;
}

// ISO 4217 currencies Stripe counts in whole units (its "zero-decimal" list).
const ZERO_DECIMAL = new Set(
  'bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf'.split(' ').map((c) => c.toUpperCase()),
);

/** `49.99 USD` from Stripe-style minor units and a currency code; null without both. */
export function money(amount: unknown, currency: unknown): string | null {
  const code = textOf(currency)?.toUpperCase();
  if (typeof amount !== 'number' || !Number.isInteger(amount) || code === undefined || !/^[A-Z]{3}$/.test(code)) {
    return null;
  }
  return ZERO_DECIMAL.has(code) ? `${amount} ${code}` : `${(amount / 100).toFixed(2)} ${code}`;
}

/** A header's value as summary text, or null. */
export function headerText(headers: HeaderBag, name: string): string | null {
  return textOf(headerValue(headers, name));
}
