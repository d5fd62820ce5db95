/**
 * HMAC over a template of the request, written once for every catalog provider that signs this way:
 * the algorithm, encoding, key, the header(s) and their format (a prefix, or `t=…,v1=…` pairs),
 * what is signed and where the timestamp comes from are the provider's data
 * (catalog/<name>/provider.json). Verification compares in constant time against every
 * configured secret (rotation) and checks freshness after the signature, so "stale" is only said
 * of what the sender really signed.
 */
import { createHmac, createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import type { HmacScheme } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { headerValue } from '../headers.ts';
import {
  MISSING_SECRET,
  badSignature,
  freshnessUnverifiable,
  malformedHeader,
  missingHeader,
  noCredential,
  rotationNote,
} from '../verdicts.ts';
import { parseJsonBody, resolveJsonPointer } from '../identify.ts';
import { digestEqual, findMatchingKey } from '../timing-safe.ts';
import { floorToSecondMs, freshnessFailure } from '../timestamp.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import {
  DecodedKeys,
  decodeKey,
  formatTimestamp,
  parseTimestampMs,
  type KeyEncoding,
  type TimestampFormat,
} from './keys.ts';
import { parseSignedTemplate, signedHeaderNames, signedPieces, type SignedPart } from './template.ts';
import { clipText, sanitizeQuery } from '../../sanitize/sanitize-request.ts';

export interface SchemeParts {
  requiredHeaders: string[];
  sensitiveHeaders: string[];
  verify: (input: VerifyInput) => VerifyOutcome;
  sign: (input: SignInput) => Record<string, string>;
}

interface Compiled {
  scheme: HmacScheme;
  parts: SignedPart[];
  key: KeyEncoding;
  headers: string[];
  timestampHeader: string | undefined;
  /** A JSON pointer to the body's own timestamp (Linear's /webhookTimestamp), when it is there. */
  bodyTimestamp: string | undefined;
  url: string | undefined;
  isoMilliseconds: boolean;
  /**
   * The configured secrets as keys, made once per secret: verification checks every delivery
   * against them, and forwarding re-signs every delivery with the first (an HMAC keyed by bytes
   * builds its key on every call; a KeyObject is built once).
   */
  keys: DecodedKeys<KeyObject>;
}

/** The URL a provider signs: the public URL it was given, with the query it called with. */
export function calledUrl(publicUrl: string | undefined, query: string | undefined): string | undefined {
  if (publicUrl === undefined) return undefined;
  return query === undefined || query === '' ? publicUrl : `${publicUrl}?${query}`;
}

/** At most this much of a URL goes into a verify_detail (the contract's 300 characters in all). */
const SHOWN_URL_MAX = 200;

/**
 * The URL a check signed with, as a failure may show it: what to compare with the URL the provider
 * was given, so a public_url that is not it is the obvious suspect. Whatever could be a secret is
 * left out: the URL's user and password (config allows no query in a public_url), and the value
 * of every secret-looking parameter of the query the delivery came with, as a stored request's is.
 */
export function shownUrl(publicUrl: string, query: string | undefined): string {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    return '[unparseable url]';
  }
  url.username = '';
  url.password = '';
  const search = sanitizeQuery(query ?? '');
  return clipText(search === '' ? url.toString() : `${url.toString()}?${search}`, SHOWN_URL_MAX);
}

/** `signature mismatch (<header>)`, and for a scheme that signs the URL, the URL it checked against. */
export function mismatchDetail(header: string, publicUrl: string | undefined, query: string | undefined): string {
  return publicUrl === undefined
    ? `signature mismatch (${header})`
    : `signature mismatch (${header}; checked against ${shownUrl(publicUrl, query)})`;
}

function expectedFormat(scheme: HmacScheme): string {
  const { signature } = scheme;
  if (signature.format === 'plain') return `${signature.prefix ?? ''}<${scheme.encoding}>`;
  const sep = signature.separator ?? ',';
  const t = signature.timestamp_key === undefined ? '' : `${signature.timestamp_key}=<timestamp>${sep}`;
  return `${t}${signature.signature_key ?? 'v1'}=<${scheme.encoding}>`;
}

interface Offered {
  candidates: string[];
  timestamp: string | undefined;
}

/** The signatures (and pairs timestamp) the headers offer, or the outcome that ends the check. */
function offered(c: Compiled, input: VerifyInput): Offered | VerifyOutcome {
  const { signature } = c.scheme;
  const [first = ''] = c.headers;
  const out: Offered = { candidates: [], timestamp: undefined };
  if (headerValue(input.headers, first) === undefined) return missingHeader(first);
  for (const header of c.headers) {
    const value = headerValue(input.headers, header)?.trim();
    if (value === undefined) continue;
    if (signature.format === 'plain') {
      const prefix = signature.prefix ?? '';
      if (!value.startsWith(prefix)) return malformedHeader(header, expectedFormat(c.scheme));
      out.candidates.push(value.slice(prefix.length).trim());
      continue;
    }
    for (const item of value.split(signature.separator ?? ',')) {
      const eq = item.indexOf('=');
      if (eq === -1) continue;
      const key = item.slice(0, eq).trim();
      const val = item.slice(eq + 1).trim();
      if (key === signature.signature_key && val !== '') out.candidates.push(val);
      else if (key === signature.timestamp_key) out.timestamp = val;
    }
    const needsTimestamp = c.scheme.timestamp?.from === 'signature';
    if (out.candidates.length === 0 || (needsTimestamp && out.timestamp === undefined)) {
      return malformedHeader(header, expectedFormat(c.scheme));
    }
  }
  if (c.scheme.encoding === 'hex') out.candidates = out.candidates.map((v) => v.toLowerCase());
  return out;
}

const isOutcome = (value: object): value is VerifyOutcome => 'ok' in value;

function verifyHmac(c: Compiled, input: VerifyInput): VerifyOutcome {
  if (input.secrets.every((secret) => secret === '')) return MISSING_SECRET;
  const keys = c.keys.usable(input.secrets);
  if (keys.length === 0) {
    return noCredential(`usable secret (${c.key})`);
  }
  const found = offered(c, input);
  if (isOutcome(found)) return found;
  for (const [name, value] of Object.entries(c.scheme.sends ?? {}) as [string, string][]) {
    const sent = headerValue(input.headers, name);
    if (sent === undefined) return missingHeader(name);
    if (sent.trim() !== value) return malformedHeader(name, value);
  }
  const source = c.scheme.timestamp?.from;
  let timestamp = found.timestamp;
  if (c.timestampHeader !== undefined) {
    timestamp = headerValue(input.headers, c.timestampHeader)?.trim();
    if (timestamp === undefined) return missingHeader(c.timestampHeader);
  }
  let timestampMs: number | null = null;
  if (timestamp !== undefined && c.scheme.timestamp !== undefined) {
    timestampMs = parseTimestampMs(timestamp, c.scheme.timestamp.format);
    const where = c.timestampHeader ?? c.headers[0] ?? '';
    if (timestampMs === null) return malformedHeader(where, `${c.scheme.timestamp.format} timestamp`);
  }
  const headerValues = new Map<string, string>();
  for (const name of signedHeaderNames(c.parts)) {
    const value = headerValue(input.headers, name);
    if (value === undefined) return missingHeader(name);
    headerValues.set(name, value);
  }
  const url = calledUrl(c.url, input.query);
  const pieces = (key: KeyObject): string => {
    const mac = createHmac(c.scheme.algorithm, key);
    for (const piece of signedPieces(c.parts, { body: input.body, timestamp, url, headers: headerValues }))
      mac.update(piece);
    return mac.digest(c.scheme.encoding);
  };
  const [display = ''] = c.headers;
  const index = findMatchingKey(keys, found.candidates, pieces, digestEqual);
  if (index === -1) {
    const urlSigned = c.parts.some((part) => part.kind === 'url');
    return badSignature(mismatchDetail(display, urlSigned ? c.url : undefined, input.query));
  }
  const rotation = rotationNote('secret', index, keys.length);
  const passed: VerifyOutcome = { ok: true, detail: `hmac-${c.scheme.algorithm} valid (${display})${rotation}` };
  if (c.bodyTimestamp !== undefined) return bodyFreshness(c, c.bodyTimestamp, input) ?? passed;
  if (timestampMs === null || source === undefined) return passed;
  const label = c.timestampHeader ?? `${display} ${c.scheme.signature.timestamp_key ?? 't'}`;
  return fresh(c, timestampMs, input, label) ?? passed;
}

/** Null when the signed timestamp is within the configured tolerance, else why not. */
function fresh(c: Compiled, timestampMs: number, input: VerifyInput, label: string): VerifyOutcome | null {
  const now = c.scheme.timestamp?.format === 'unix' ? floorToSecondMs(input.nowMs) : input.nowMs;
  return freshnessFailure(timestampMs, now, input.toleranceSeconds, label);
}

/** The body's value at `pointer` as a timestamp in `format` (a JSON number or a string), or null. */
function bodyTimestampMs(body: Buffer, pointer: string, format: TimestampFormat): number | null {
  const value = resolveJsonPointer(parseJsonBody(body), pointer);
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 ? parseTimestampMs(String(value), format) : null;
  }
  return typeof value === 'string' ? parseTimestampMs(value, format) : null;
}

/**
 * Freshness of a timestamp the body carries (Linear's webhookTimestamp). The body is signed, so the
 * timestamp is read only after the signature passed; a signed body without a usable one is refused,
 * since the sender always writes it and without it the delivery could be replayed for ever.
 */
function bodyFreshness(c: Compiled, pointer: string, input: VerifyInput): VerifyOutcome | null {
  const field = pointer.slice(1);
  const timestampMs = bodyTimestampMs(input.body, pointer, c.scheme.timestamp?.format ?? 'unix');
  if (timestampMs === null) {
    return freshnessUnverifiable(field);
  }
  return fresh(c, timestampMs, input, `body ${field}`);
}

/**
 * The headers a sender would set: a fresh timestamp, the signature in the provider's format, any
 * signed header taken from the stored delivery (ids are what receivers dedupe on) or made afresh,
 * and the headers the provider always sends with it.
 */
function signHmac(c: Compiled, input: SignInput): Record<string, string> {
  const key = c.keys.get(input.secret);
  if (key === null) throw invalidArgument(`the secret is not a valid ${c.key} key`);
  const out: Record<string, string> = {};
  const headerValues = new Map<string, string>();
  for (const name of signedHeaderNames(c.parts)) {
    const value = (input.headers === undefined ? undefined : headerValue(input.headers, name)) ?? randomUUID();
    headerValues.set(name, value);
    out[name.toLowerCase()] = value;
  }
  const format = c.scheme.timestamp?.format;
  const timestamp = format === undefined ? undefined : formatTimestamp(input.nowMs, format, c.isoMilliseconds);
  if (c.timestampHeader !== undefined && timestamp !== undefined) out[c.timestampHeader.toLowerCase()] = timestamp;
  const url = calledUrl(c.url, input.query);
  const mac = createHmac(c.scheme.algorithm, key);
  for (const piece of signedPieces(c.parts, { body: input.body, timestamp, url, headers: headerValues }))
    mac.update(piece);
  const digest = mac.digest(c.scheme.encoding);
  const { signature } = c.scheme;
  const header = (c.headers[0] ?? '').toLowerCase();
  if (signature.format === 'plain') {
    out[header] = `${signature.prefix ?? ''}${digest}`;
  } else {
    const sep = signature.separator ?? ',';
    const t =
      c.scheme.timestamp?.from === 'signature' ? `${signature.timestamp_key ?? 't'}=${timestamp ?? ''}${sep}` : '';
    out[header] = `${t}${signature.signature_key ?? 'v1'}=${digest}`;
  }
  for (const [name, value] of Object.entries(c.scheme.sends ?? {}) as [string, string][])
    out[name.toLowerCase()] = value;
  return out;
}

export interface HmacOptions {
  /** Where the provider sends (public URL + route), for templates that sign {url}. */
  publicUrl?: string | undefined;
  /** ISO 8601 timestamps are signed with milliseconds (generic-hmac's way) rather than whole seconds. */
  isoMilliseconds?: boolean;
}

/**
 * Null when where the timestamp comes from and what is signed agree, else what is wrong. The
 * catalog schema refuses the same entries (hmacScheme's if/then); this is for schemes built from
 * anything else (generic-hmac's options, tests). Each rule closes a way for a declared timestamp to
 * go unchecked or for an unsigned one to be trusted: a `signature` timestamp needs a pairs item to
 * come from, a header's must be signed, a body's is signed with the body (so the template has no
 * {timestamp}), and a pairs timestamp item is only read when it is the declared source.
 */
function timestampProblem(scheme: HmacScheme, parts: readonly SignedPart[]): string | null {
  const from = scheme.timestamp?.from;
  const signsTimestamp = parts.some((p) => p.kind === 'timestamp');
  const pairsTimestamp = scheme.signature.format === 'pairs' && scheme.signature.timestamp_key !== undefined;
  if (from === 'signature') {
    if (!pairsTimestamp) return 'takes its timestamp from the signature, which needs format pairs with a timestamp_key';
    return signsTimestamp ? null : 'takes its timestamp from the signature but does not sign {timestamp}';
  }
  if (scheme.signature.timestamp_key !== undefined) {
    return 'has a timestamp_key but does not take its timestamp from the signature, so it would never be checked';
  }
  if (from?.startsWith('header:') === true) {
    return signsTimestamp ? null : 'takes its timestamp from a header but does not sign {timestamp}';
  }
  return signsTimestamp ? 'signs {timestamp} but takes it from nowhere signed' : null;
}

export function createHmacScheme(scheme: HmacScheme, where: string, options: HmacOptions = {}): SchemeParts {
  const parts = parseSignedTemplate(scheme.signed, `${where}.signed`);
  if (parts.some((p) => p.kind === 'url') && options.publicUrl === undefined) {
    throw invalidArgument(`${where}: signs the URL it calls, so public_url (or server.public_url) is required`);
  }
  const problem = timestampProblem(scheme, parts);
  if (problem !== null) throw invalidArgument(`${where}: ${problem}`);
  const from = scheme.timestamp?.from;
  const timestampHeader = from?.startsWith('header:') === true ? from.slice('header:'.length) : undefined;
  const compiled: Compiled = {
    scheme,
    parts,
    key: scheme.key ?? 'utf8',
    headers: scheme.signature.headers,
    timestampHeader,
    bodyTimestamp: from?.startsWith('/') === true ? from : undefined,
    url: options.publicUrl,
    isoMilliseconds: options.isoMilliseconds === true,
    keys: new DecodedKeys((secret) => {
      const raw = decodeKey(secret, scheme.key ?? 'utf8');
      return raw === null ? null : createSecretKey(raw);
    }),
  };
  const required = [
    scheme.signature.headers[0] ?? '',
    ...(timestampHeader === undefined ? [] : [timestampHeader]),
    ...signedHeaderNames(parts),
  ].map((h) => h.toLowerCase());
  return {
    requiredHeaders: [...new Set(required)],
    sensitiveHeaders: scheme.signature.headers.map((h) => h.toLowerCase()),
    verify: (input) => verifyHmac(compiled, input),
    sign: (input) => signHmac(compiled, input),
  };
}
