import { randomUUID } from 'node:crypto';
import {
  DIGEST_ENCODINGS,
  HMAC_ALGORITHMS,
  SECRET_ENCODINGS,
  TIMESTAMP_FORMATS,
  type DigestEncoding,
  type HmacAlgorithm,
  type SecretEncoding,
  type TimestampFormat,
} from '../../generated/constants.ts';
import type { ProviderWithDefaults } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { headerValue } from './headers.ts';
import {
  compareSignatures,
  hmacEncoded,
  malformedHeader,
  missingHeader,
  MISSING_SECRET,
  normaliseHex,
} from './hmac.ts';
import { genericIdentity, LazyBody } from './identify.ts';
import { floorToSecondMs, freshnessFailure, parseUnixSeconds } from './timestamp.ts';
import type { Preset, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { summarizeGeneric } from './summary.ts';

/**
 * A sender's home-grown HMAC scheme, as written under `hmac:` in a provider's config (snake_case
 * like the rest of that file), with the schema's defaults filled in by config validation
 * (schemas/config.schema.json documents each option and its default).
 *
 * - `header`: the header carrying the signature, e.g. `X-Signature`.
 * - `algorithm`, `encoding`: the digest and how it is written (hex compares case-insensitively).
 * - `prefix`: text before the digest in the header, e.g. `sha256=`; when set it must be present.
 * - `signed`: what is signed. `body` or a template mixing literal text with the tokens
 *   `{body}` (the raw bytes, exactly once), `{timestamp}` (the timestamp header's value exactly as
 *   sent) and `{header:<Name>}` (another header's value, e.g. a message id). Examples:
 *   `{timestamp}.{body}`; Twitch EventSub is
 *   `{header:Twitch-Eventsub-Message-Id}{timestamp}{body}` with
 *   `timestamp_header: Twitch-Eventsub-Message-Timestamp`, `timestamp_format: iso8601`,
 *   `prefix: sha256=`. Any other brace in a template is an error, so a typo such as `{timestmp}`
 *   fails at startup instead of at every delivery.
 * - `timestamp_header`: the header holding the signed timestamp; required exactly when `signed`
 *   uses `{timestamp}` (an unsigned timestamp proves nothing, so it is not accepted on its own).
 *   The timestamp is checked against the provider's tolerance in both directions.
 * - `timestamp_format`: `unix` (seconds), `unix_ms` or `iso8601` (RFC 3339).
 * - `secret_encoding`: how the configured secret becomes the HMAC key: `utf8` (the string's bytes,
 *   as most senders use it), `base64` (a `whsec_` prefix is stripped first) or `hex`.
 */
export type GenericHmacOptions = NonNullable<ProviderWithDefaults['hmac']>;

type Segment =
  { kind: 'literal'; text: string } | { kind: 'body' } | { kind: 'timestamp' } | { kind: 'header'; name: string };

interface CompiledScheme {
  header: string;
  algorithm: HmacAlgorithm;
  encoding: DigestEncoding;
  prefix: string;
  segments: Segment[];
  timestampHeader: string | undefined;
  timestampFormat: TimestampFormat;
  secretEncoding: SecretEncoding;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function oneOf<T extends string>(value: unknown, allowed: readonly T[], option: string): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidArgument(`hmac.${option} must be one of ${allowed.join(', ')}`);
}

function headerName(value: unknown, option: string): string {
  if (typeof value !== 'string' || !HEADER_NAME.test(value)) {
    throw invalidArgument(`hmac.${option} must be a header name`);
  }
  return value;
}

function parseTemplate(template: string): Segment[] {
  const segments: Segment[] = [];
  const token = /\{(body|timestamp|header:([^{}]*))\}/g;
  let last = 0;
  const pushLiteral = (text: string): void => {
    if (text === '') return;
    if (/[{}]/.test(text)) {
      throw invalidArgument(
        `hmac.signed: unknown placeholder in "${template}"; use {body}, {timestamp}, {header:<Name>}`,
      );
    }
    segments.push({ kind: 'literal', text });
  };
  for (const match of template.matchAll(token)) {
    pushLiteral(template.slice(last, match.index));
    last = match.index + match[0].length;
    if (match[1] === 'body') segments.push({ kind: 'body' });
    else if (match[1] === 'timestamp') segments.push({ kind: 'timestamp' });
    else segments.push({ kind: 'header', name: headerName(match[2]?.trim(), 'signed {header:<Name>}') });
  }
  pushLiteral(template.slice(last));
  if (segments.filter((segment) => segment.kind === 'body').length !== 1) {
    throw invalidArgument(
      'hmac.signed must contain {body} exactly once: a signature that skips the body proves nothing',
    );
  }
  return segments;
}

/**
 * Checks what the schema cannot (header names, the template) and, because presets are also built
 * outside config (tests, tools), the enums once more.
 */
export function compileGenericHmacOptions(options: GenericHmacOptions): CompiledScheme {
  const header = headerName(options.header, 'header');
  const signed = options.signed === 'body' ? '{body}' : options.signed;
  if (typeof signed !== 'string') throw invalidArgument('hmac.signed must be "body" or a template string');
  const segments = parseTemplate(signed);
  const usesTimestamp = segments.some((segment) => segment.kind === 'timestamp');
  const timestampHeader =
    options.timestamp_header === undefined ? undefined : headerName(options.timestamp_header, 'timestamp_header');
  if (usesTimestamp && timestampHeader === undefined) {
    throw invalidArgument('hmac.signed uses {timestamp}, so hmac.timestamp_header is required');
  }
  if (!usesTimestamp && timestampHeader !== undefined) {
    throw invalidArgument(
      'hmac.timestamp_header is set but hmac.signed has no {timestamp}: an unsigned timestamp proves nothing',
    );
  }
  if (options.prefix !== undefined && typeof options.prefix !== 'string')
    throw invalidArgument('hmac.prefix must be a string');
  return {
    header,
    algorithm: oneOf(options.algorithm, HMAC_ALGORITHMS, 'algorithm'),
    encoding: oneOf(options.encoding, DIGEST_ENCODINGS, 'encoding'),
    prefix: options.prefix ?? '',
    segments,
    timestampHeader,
    timestampFormat: oneOf(options.timestamp_format, TIMESTAMP_FORMATS, 'timestamp_format'),
    secretEncoding: oneOf(options.secret_encoding, SECRET_ENCODINGS, 'secret_encoding'),
  };
}

function decodeSecret(secret: string, encoding: SecretEncoding): Buffer | null {
  if (secret === '') return null;
  if (encoding === 'utf8') return Buffer.from(secret, 'utf8');
  if (encoding === 'hex') {
    return /^(?:[0-9a-fA-F]{2})+$/.test(secret) ? Buffer.from(secret, 'hex') : null;
  }
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : null;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

function parseTimestampMs(value: string, format: TimestampFormat): number | null {
  if (format === 'unix') {
    const seconds = parseUnixSeconds(value);
    return seconds === null ? null : seconds * 1000;
  }
  if (format === 'unix_ms') return /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : null;
  if (!ISO_8601.test(value.trim())) return null;
  const ms = Date.parse(value.trim());
  return Number.isNaN(ms) ? null : ms;
}

function formatTimestamp(nowMs: number, format: TimestampFormat): string {
  if (format === 'unix') return String(Math.floor(nowMs / 1000));
  if (format === 'unix_ms') return String(Math.floor(nowMs));
  return new Date(nowMs).toISOString();
}

function signedParts(
  scheme: CompiledScheme,
  body: Buffer,
  timestamp: string | undefined,
  headerValues: ReadonlyMap<string, string>,
): (string | Buffer)[] {
  return scheme.segments.map((segment) => {
    switch (segment.kind) {
      case 'literal':
        return segment.text;
      case 'body':
        return body;
      case 'timestamp':
        return timestamp ?? '';
      case 'header':
        return headerValues.get(segment.name.toLowerCase()) ?? '';
    }
  });
}

function templateHeaders(scheme: CompiledScheme): string[] {
  return scheme.segments.flatMap((segment) => (segment.kind === 'header' ? [segment.name] : []));
}

function verifyGeneric(scheme: CompiledScheme, input: VerifyInput): VerifyOutcome {
  if (input.secrets.every((secret) => secret.length === 0)) return MISSING_SECRET;
  const keys = input.secrets
    .map((secret) => decodeSecret(secret, scheme.secretEncoding))
    .filter((key): key is Buffer => key !== null);
  if (keys.length === 0) {
    return {
      ok: false,
      reason: 'missing_secret',
      detail: `no usable secret configured (secret_encoding ${scheme.secretEncoding}); delivery rejected`,
    };
  }
  const signature = headerValue(input.headers, scheme.header);
  if (signature === undefined) return missingHeader(scheme.header);
  let timestamp: string | undefined;
  if (scheme.timestampHeader !== undefined) {
    timestamp = headerValue(input.headers, scheme.timestampHeader)?.trim();
    if (timestamp === undefined) return missingHeader(scheme.timestampHeader);
  }
  const headerValues = new Map<string, string>();
  for (const name of templateHeaders(scheme)) {
    const value = headerValue(input.headers, name);
    if (value === undefined) return missingHeader(name);
    headerValues.set(name.toLowerCase(), value);
  }

  const trimmed = signature.trim();
  if (!trimmed.startsWith(scheme.prefix)) {
    return malformedHeader(scheme.header, `${scheme.prefix}<${scheme.encoding}>`);
  }
  let timestampMs: number | null = null;
  if (scheme.timestampHeader !== undefined && timestamp !== undefined) {
    timestampMs = parseTimestampMs(timestamp, scheme.timestampFormat);
    if (timestampMs === null) return malformedHeader(scheme.timestampHeader, `${scheme.timestampFormat} timestamp`);
  }
  const digest = trimmed.slice(scheme.prefix.length).trim();
  const outcome = compareSignatures({
    algorithm: scheme.algorithm,
    header: scheme.header,
    keys,
    candidates: [scheme.encoding === 'hex' ? normaliseHex(digest) : digest],
    expectedFor: (key) =>
      hmacEncoded(scheme.algorithm, key, signedParts(scheme, input.body, timestamp, headerValues), scheme.encoding),
  });
  if (!outcome.ok || timestampMs === null || scheme.timestampHeader === undefined) return outcome;
  const nowMs = scheme.timestampFormat === 'unix' ? floorToSecondMs(input.nowMs) : input.nowMs;
  return freshnessFailure(timestampMs, nowMs, input.toleranceSeconds, scheme.timestampHeader) ?? outcome;
}

/**
 * Produces the signature header, a fresh timestamp header when one is signed, and any header the
 * template signs: taken from the stored delivery when present (ids are what receivers dedupe on),
 * otherwise a new random id.
 */
function signGeneric(scheme: CompiledScheme, input: SignInput): Record<string, string> {
  const key = decodeSecret(input.secret, scheme.secretEncoding);
  if (key === null) throw invalidArgument(`secret is not valid for secret_encoding ${scheme.secretEncoding}`);
  const out: Record<string, string> = {};
  const headerValues = new Map<string, string>();
  for (const name of templateHeaders(scheme)) {
    const value = (input.headers === undefined ? undefined : headerValue(input.headers, name)) ?? randomUUID();
    headerValues.set(name.toLowerCase(), value);
    out[name.toLowerCase()] = value;
  }
  let timestamp: string | undefined;
  if (scheme.timestampHeader !== undefined) {
    timestamp = formatTimestamp(input.nowMs, scheme.timestampFormat);
    out[scheme.timestampHeader.toLowerCase()] = timestamp;
  }
  const digest = hmacEncoded(
    scheme.algorithm,
    key,
    signedParts(scheme, input.body, timestamp, headerValues),
    scheme.encoding,
  );
  out[scheme.header.toLowerCase()] = scheme.prefix + digest;
  return out;
}

export function createGenericHmacPreset(options: GenericHmacOptions): Preset {
  const scheme = compileGenericHmacOptions(options);
  const required = [
    scheme.header,
    ...(scheme.timestampHeader === undefined ? [] : [scheme.timestampHeader]),
    ...templateHeaders(scheme),
  ];
  return {
    name: 'generic-hmac',
    trustMode: 'signed',
    credential: 'secret',
    requiredHeaders: [...new Set(required.map((name) => name.toLowerCase()))],
    sensitiveHeaders: [scheme.header.toLowerCase()],
    verify: (input) => verifyGeneric(scheme, input),
    sign: (input) => signGeneric(scheme, input),
    identify: (body, headers, parsed) => genericIdentity(parsed ?? new LazyBody(body), headers),
    summarize: summarizeGeneric,
  };
}
