import {
  DIGEST_ENCODINGS,
  HMAC_ALGORITHMS,
  SECRET_ENCODINGS,
  TIMESTAMP_FORMATS,
} from '../../../generated/constants.ts';
import type { HmacScheme, ProviderWithDefaults } from '../../../generated/types.ts';
import { invalidArgument } from '../../errors/app-error.ts';
import { createHmacScheme } from '../schemes/hmac-scheme.ts';
import { parseSignedTemplate } from '../schemes/template.ts';
import { code, defineEngine } from './engine.ts';

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
 *
 * @internal exported for tests, which build these options
 */
export type GenericHmacOptions = NonNullable<ProviderWithDefaults['hmac']>;

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

/**
 * The options as the shared HMAC engine's description of a scheme, the shape a catalog entry gives
 * it (schemas/provider-catalog-entry.schema.json#/$defs/hmacScheme). What the engine does not
 * refuse itself is checked here, at config time: header names, and a timestamp header exactly when
 * the template signs {timestamp} (an unsigned timestamp proves nothing). Because presets are also
 * built outside config (tests, tools), the enums are checked once more. {url} and {method} are the
 * catalog's alone: generic-hmac has no public_url to sign.
 */
function genericHmacScheme(options: GenericHmacOptions): HmacScheme {
  const header = headerName(options.header, 'header');
  const signed = options.signed === 'body' ? '{body}' : options.signed;
  if (typeof signed !== 'string') throw invalidArgument('hmac.signed must be "body" or a template string');
  const parts = parseSignedTemplate(signed, 'hmac.signed');
  if (parts.some((part) => part.kind === 'url' || part.kind === 'method')) {
    throw invalidArgument(`hmac.signed: unknown placeholder in "${signed}"; use {body}, {timestamp}, {header:<Name>}`);
  }
  const usesTimestamp = parts.some((part) => part.kind === 'timestamp');
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
  const format = oneOf(options.timestamp_format, TIMESTAMP_FORMATS, 'timestamp_format');
  return {
    kind: 'hmac',
    algorithm: oneOf(options.algorithm, HMAC_ALGORITHMS, 'algorithm'),
    encoding: oneOf(options.encoding, DIGEST_ENCODINGS, 'encoding'),
    key: oneOf(options.secret_encoding, SECRET_ENCODINGS, 'secret_encoding'),
    signature: {
      headers: [header],
      format: 'plain',
      ...(options.prefix === undefined || options.prefix === '' ? {} : { prefix: options.prefix }),
    },
    signed,
    ...(timestampHeader === undefined ? {} : { timestamp: { from: `header:${timestampHeader}`, format } }),
  };
}

/**
 * The user's own HMAC scheme (preset generic-hmac), on the same engine as the catalog's: its
 * parameters are the provider's `hmac:` config, so its catalog entry only describes it for the
 * docs table. ISO 8601 timestamps it signs keep their milliseconds, as generic-hmac always wrote
 * them (catalog providers write whole seconds).
 */
export const configuredHmacEngine = defineEngine<'configured-hmac'>({
  kind: 'configured-hmac',
  schemeOptions: () => ['hmac'],
  requiredOption: { key: 'hmac', what: 'hmac.header (and algorithm, encoding)' },
  build: ({ options, entry }) => {
    if (options.hmac === undefined) {
      throw invalidArgument(`preset ${entry.name} needs hmac options (at least hmac.header)`);
    }
    return createHmacScheme(genericHmacScheme(options.hmac), 'hmac', { isoMilliseconds: true });
  },
  docs: {
    scheme: (scheme) => `${scheme.algorithm} of ${code(scheme.signed)}`,
    headers: (scheme) => scheme.headers,
    timestamped: (scheme) => scheme.timestamped === true,
  },
});
