/**
 * Text PostgreSQL can store. Used wherever a value that came from outside (a payload field, a
 * consumer's answer) is written to a text or jsonb column: one such value must never fail the
 * statement, and with it the batch it rides in.
 */

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
export const needsReplacing = (value: string): boolean => MAY_NEED_REPLACING.test(value);

export const storableOrNull = (value: string | null): string | null => (value === null ? null : storable(value));
