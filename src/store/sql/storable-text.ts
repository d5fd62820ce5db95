/**
 * Text PostgreSQL can store. Used wherever a value that came from outside (a payload field, a
 * consumer's answer) is written to a text or jsonb column: one such value must never fail the
 * statement, and with it the batch it rides in.
 */
import type { EventHeaders } from '../../../generated/types.ts';

// Lone surrogates become U+FFFD, exactly what UTF-8 encoding would do to them anyway.
// NUL or any surrogate: only such a value can need storable()'s replacements.
// eslint-disable-next-line no-control-regex -- finding U+0000 is the point
const MAY_NEED_REPLACING = /[\u0000\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * PostgreSQL text and jsonb cannot hold NUL, and jsonb rejects the escape JSON.stringify writes
 * for a lone surrogate. Such characters can only come from a payload field (a queue message's
 * type, say) and would fail the whole batch, so they become U+FFFD instead.
 */
export function storable(value: string): string {
  // Almost every value has neither: one scan answers that, without building new strings.
  if (!needsReplacing(value)) return value;
  return value.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
}

/** Whether storable() might change `value` (it holds NUL or a surrogate). */
const needsReplacing = (value: string): boolean => MAY_NEED_REPLACING.test(value);

export const storableOrNull = (value: string | null): string | null => (value === null ? null : storable(value));

/** Headers as the jsonb column takes them: every name and value storable text, each header a string or a list of several. */
export function storableHeaders(headers: EventHeaders): string {
  // Almost every delivery's headers need no replacement: then they are written as they are, without
  // a copy (fromEntries below keeps a header named __proto__ as data; so does JSON.stringify of
  // sanitizeHeaders' own object, whose properties are all own).
  if (!Object.entries(headers).some(([name, value]) => needsReplacing(name) || valueNeedsReplacing(value))) {
    return JSON.stringify(headers);
  }
  const entries: Array<[string, string | string[]]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') {
      entries.push([storable(name), storable(value)]);
    } else if (Array.isArray(value)) {
      const values = value.filter((item) => typeof item === 'string').map(storable);
      // The contract's shape: one value is a string, several are a list; an empty list is no header.
      if (values.length === 1 && values[0] !== undefined) entries.push([storable(name), values[0]]);
      else if (values.length > 1) entries.push([storable(name), values]);
    }
  }
  // fromEntries defines own properties, so even a header named __proto__ is kept as data.
  return JSON.stringify(Object.fromEntries(entries));
}

/** Whether a header value is other than storable text as it is: one that storable() would change, or not a string. */
function valueNeedsReplacing(value: unknown): boolean {
  if (typeof value === 'string') return needsReplacing(value);
  return (
    !Array.isArray(value) || value.length < 2 || value.some((item) => typeof item !== 'string' || needsReplacing(item))
  );
}
