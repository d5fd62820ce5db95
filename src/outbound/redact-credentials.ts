/**
 * A consumer's answer may echo the request it got: an error page that prints every header hands
 * back the provider's token or a fresh signature, and the excerpt kept of it is readable by every
 * token holder. So before an excerpt is stored, every credential switchboard attached to that
 * request is replaced by [redacted], wherever it appears.
 */
import { BASIC_AUTHORIZATION } from '../verify/schemes/credential-schemes.ts';
import { REDACTED } from '../sanitize/sanitize-headers.ts';

/** Parts of a credential header shorter than this are not secrets on their own (`v1`, `t`, `sha256`). */
const MIN_PART_LENGTH = 8;
/** A credential cut by the excerpt's end leaks its start: a tail this long that begins one is redacted. */
const MIN_CUT_PREFIX = 4;

/**
 * What to look for: each configured secret or token, each credential header's value, and the
 * parts of a value that a consumer may print on their own (`t=…,v1=<hex>` gives `<hex>`), each
 * also as JSON or a URL would escape it. HTTP Basic's pair counts whole and by its password alone
 * (a consumer that says "wrong password: …" prints just that), whether it is configured (the
 * basic presets' `username:password` secrets) or only seen in an `Authorization: Basic` value.
 * Longest first, so a whole value goes before its parts.
 */
export function credentialNeedles(secrets: readonly string[], headerValues: readonly string[]): string[] {
  const needles = new Set<string>();
  const add = (value: string, minLength: number): void => {
    if (value.length < minLength) return;
    needles.add(value);
    needles.add(JSON.stringify(value).slice(1, -1));
    needles.add(encodeURIComponent(value));
  };
  const addPair = (pair: string): void => {
    add(pair, MIN_CUT_PREFIX);
    const colon = pair.indexOf(':');
    // The user name is not a secret; the password is, as short as the whole secret may be.
    if (colon >= 0) add(pair.slice(colon + 1), MIN_CUT_PREFIX);
  };
  for (const secret of secrets) addPair(secret);
  for (const value of headerValues) {
    add(value, MIN_CUT_PREFIX);
    const basic = BASIC_AUTHORIZATION.exec(value)?.[1];
    if (basic !== undefined) addPair(Buffer.from(basic, 'base64').toString('utf8'));
    for (const part of value.split(/[\s,;]+/)) {
      add(part, MIN_PART_LENGTH);
      const equals = part.indexOf('=');
      if (equals > 0) add(part.slice(equals + 1), MIN_PART_LENGTH);
      // A scheme name before the value (`Bearer <token>`) is stripped by the split above.
    }
  }
  return [...needles].sort((a, b) => b.length - a.length);
}

/**
 * The excerpt with every needle replaced; a needle cut off by the excerpt's closing "…" too.
 * `needles` may be a function, called only when the excerpt is long enough to hold one: every
 * needle and every cut prefix is at least MIN_CUT_PREFIX long, and a consumer's "ok" or "{}" is not.
 */
export function redactCredentials(
  excerpt: string | undefined,
  needlesOrMake: readonly string[] | (() => readonly string[]),
): string | undefined {
  if (excerpt === undefined || excerpt.length < MIN_CUT_PREFIX) return excerpt;
  const needles = typeof needlesOrMake === 'function' ? needlesOrMake() : needlesOrMake;
  if (needles.length === 0) return excerpt;
  let text = excerpt;
  for (const needle of needles) if (text.includes(needle)) text = text.replaceAll(needle, REDACTED);
  const cut = text.endsWith('…');
  if (!cut) return text;
  const body = text.slice(0, -1);
  for (const needle of needles) {
    for (let length = Math.min(needle.length - 1, body.length); length >= MIN_CUT_PREFIX; length -= 1) {
      if (body.endsWith(needle.slice(0, length))) return `${body.slice(0, -length)}${REDACTED}…`;
    }
  }
  return text;
}
