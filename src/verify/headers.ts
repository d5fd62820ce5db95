import type { HeaderBag } from './preset-types.ts';

/**
 * Reads one header. Node lower-cases incoming names, but header bags rebuilt from storage or by
 * hand may not be, so an exact lower-case hit is tried first and a case-insensitive scan second.
 * Repeated headers arrive as arrays only for a few names; the first value is taken. A blank value
 * counts as absent, because a sender that set an empty signature sent no signature.
 */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const lower = name.toLowerCase();
  // Own properties only: a configured name such as "__proto__" must not read Object.prototype.
  let raw = Object.hasOwn(headers, lower) ? headers[lower] : undefined;
  if (raw === undefined) {
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === lower) {
        raw = value;
        break;
      }
    }
  }
  const value: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  return value;
}

/** The first of several alternative header names that is present, with the name it was found under. */
export function firstHeader(headers: HeaderBag, names: readonly string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = headerValue(headers, name);
    if (value !== undefined) return { name, value };
  }
  return undefined;
}

/**
 * The first unmet entry of a preset's requiredHeaders, formatted for a detail line
 * ("x-hub-signature-256", or "webhook-id or svix-id" for a group), or null when all are present.
 */
export function findMissingHeader(
  required: readonly (string | readonly string[])[],
  headers: HeaderBag,
): string | null {
  for (const entry of required) {
    const names = typeof entry === 'string' ? [entry] : entry;
    if (firstHeader(headers, names) === undefined) return names.join(' or ');
  }
  return null;
}
