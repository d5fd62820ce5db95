import type { EventHeaders } from '../../generated/types.ts';
// The header lists are shared with the sending path and switchboard listen, which never send what is dropped or redacted here.
import { ALWAYS_SENSITIVE_HEADERS, HOP_BY_HOP_HEADERS } from '../shared/header-names.ts';
// The one list of credential-like names: summaries and delivery ids leave out fields it names too.
import { looksLikeCredential } from '../shared/credential-names.ts';

export const REDACTED = '[redacted]';

/** The name pattern of schemas/event-headers.schema.json (an HTTP token, lower-case). */
const STORED_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

const HOP_BY_HOP: ReadonlySet<string> = new Set(HOP_BY_HOP_HEADERS);
const ALWAYS_SENSITIVE: ReadonlySet<string> = new Set(ALWAYS_SENSITIVE_HEADERS);

/**
 * The lower-cased sensitive names for one list, built once per list object: ingest passes its
 * preset's constant list with every request.
 */
const sensitiveSets = new WeakMap<object, ReadonlySet<string>>();
function sensitiveNames(extra: Iterable<string> | undefined): ReadonlySet<string> {
  if (extra === undefined) return ALWAYS_SENSITIVE;
  let names = sensitiveSets.get(extra);
  if (names === undefined) {
    names = new Set([...ALWAYS_SENSITIVE_HEADERS, ...[...extra].map((name) => name.toLowerCase())]);
    sensitiveSets.set(extra, names);
  }
  return names;
}

export interface SanitizeOptions {
  /** Names (any case) whose values are replaced by [redacted]: signatures, tokens, credentials. Read once per list object (presets pass constant lists), so do not change a list after passing it. */
  sensitiveHeaders?: Iterable<string>;
  /**
   * Drop hop-by-hop headers and those named in Connection. True for HTTP; queue sources turn it off
   * because their "headers" are message fields, where a field called `connection` is just data.
   */
  dropHopByHop?: boolean;
  /**
   * Names stored as received even though they look like a credential: an asymmetric preset's
   * original signature headers, which are public proofs rather than secrets and which replay
   * sends back unchanged (Preset.originalHeaders).
   */
  keepHeaders?: readonly string[];
}

/**
 * Builds the stored header map from Node's `rawHeaders` (name, value, name, value, …), which keeps
 * every occurrence in arrival order; `req.headers` would have joined or dropped repeats.
 *
 * Names outside the schema's pattern are dropped rather than normalised: Node's parser already
 * refuses such names on the wire, so they can only come from non-HTTP sources (queue fields), and
 * any normalisation (e.g. replacing a space) could merge two distinct names or forge a known one.
 */
export function sanitizeHeaders(rawHeaders: readonly string[], options: SanitizeOptions = {}): EventHeaders {
  const sensitive = sensitiveNames(options.sensitiveHeaders);
  const dropHopByHop = options.dropHopByHop ?? true;
  const keep = options.keepHeaders ?? [];
  // Under every preset, open included: a name that looks like a credential (a sender's token
  // such as x-gitlab-token, a signature, an API key or a secret) is redacted too, since an open
  // provider's preset names none of its sender's headers.
  const redacted = (name: string): boolean =>
    sensitive.has(name) || (looksLikeCredential(name) && !keep.includes(name));

  // Names a Connection header lists beyond the standard hop-by-hop ones (usually none: Node's
  // clients send "keep-alive"), so the common request builds no set of its own.
  const alsoDropped: string[] = [];
  if (dropHopByHop) {
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      if (rawHeaders[i]?.toLowerCase() !== 'connection') continue;
      for (const token of (rawHeaders[i + 1] ?? '').split(',')) {
        const named = token.trim().toLowerCase();
        if (named !== '' && !HOP_BY_HOP.has(named)) alsoDropped.push(named);
      }
    }
  }
  const drop = (name: string): boolean => dropHopByHop && (HOP_BY_HOP.has(name) || alsoDropped.includes(name));

  // A Map keeps names such as __proto__ as plain data; Object.fromEntries then defines them as own
  // properties instead of touching the prototype. A name seen once holds its value; a repeat turns
  // it into the list of every value (the contract's shape: several values are a list of two or
  // more), so the common request, with no repeats, allocates no list at all.
  const collected = new Map<string, string | [string, string, ...string[]]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] ?? '').toLowerCase();
    if (!STORED_NAME.test(name) || drop(name)) continue;
    const value = redacted(name) ? REDACTED : withoutNul(rawHeaders[i + 1] ?? '');
    const earlier = collected.get(name);
    if (earlier === undefined) collected.set(name, value);
    else if (typeof earlier === 'string') collected.set(name, [earlier, value]);
    else earlier.push(value);
  }
  return Object.fromEntries(collected);
}

/**
 * PostgreSQL's jsonb cannot hold U+0000. HTTP parsers refuse it in header values, but queue fields
 * are arbitrary bytes, and one such value must not make the whole event (or its batch) unstorable.
 */
function withoutNul(value: string): string {
  return value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
}
