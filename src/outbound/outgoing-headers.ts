import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { EventHeaders } from '../../generated/types.ts';
import type { ProviderConfig } from '../config/resolve-config.ts';
import { REDACTED } from '../sanitize/sanitize-headers.ts';
import {
  EVENT_ID_HEADER,
  NEVER_SENT_HEADERS as NEVER_COPIED,
  NEVER_SENT_PREFIXES as NEVER_COPIED_PREFIXES,
  SENDABLE_HEADER_VALUE as SENDABLE_VALUE,
} from '../shared/header-names.ts';

export type OutgoingHeaders = Record<string, string | string[]>;

/*
 * Per preset, the stored headers a consumer routes or dedupes on come from the catalog
 * (catalog/<name>/provider.json, forward_headers). Deliberately an allow-list: a stored header
 * that is not known to be harmless is not replayed, because stored headers include whatever a
 * sender (or a proxy in front of switchboard) added, and an unknown name may be a credential that
 * ingest had no reason to redact. Signature and timestamp headers are never in it: they are
 * redacted in storage and re-signing produces fresh ones (asymmetric presets send the originals
 * through credentials, only for an event that passed its check). Slack's retry headers are left
 * out: many Slack apps ack-and-ignore retries, so a replay carrying them would be dropped by the
 * very consumer being debugged.
 */

/**
 * The sender's user agent is sent too: it is not secret, and some consumers branch on it
 * (`GitHub-Hookshot/…`). EVENT_ID_HEADER is what tells switchboard's requests apart.
 */
const COMMON_HEADERS: readonly string[] = ['user-agent'];

function headerSourceName(spec: string | undefined): string | undefined {
  if (spec === undefined || !spec.startsWith('header:')) return undefined;
  const name = spec.slice('header:'.length).trim().toLowerCase();
  return name === '' ? undefined : name;
}

export interface DeliveryHeaderSelection {
  /** Lower-cased names allowed through. */
  names: ReadonlySet<string>;
  prefixes: readonly string[];
  /** Lower-cased names refused even when allowed: the preset's secret and signature headers. */
  refused: ReadonlySet<string>;
}

/**
 * What may be copied from a stored event of this provider. `secretHeaders` are the preset's
 * sensitive headers plus any configured token header.
 *
 * Queue events copy nothing: their "headers" are message fields, data rather than HTTP metadata.
 * An event whose provider is no longer configured gets only the common headers.
 */
export function deliveryHeaderSelection(
  provider: ProviderConfig | undefined,
  secretHeaders: readonly string[],
): DeliveryHeaderSelection {
  const refused = new Set(secretHeaders.map((n) => n.toLowerCase()));
  if (provider?.family === 'queue') return { names: new Set(), prefixes: [], refused };
  const names = new Set(COMMON_HEADERS);
  const prefixes: string[] = [];
  if (provider !== undefined) {
    for (const name of PROVIDER_CATALOG[provider.presetName].forward_headers ?? []) names.add(name);
    // The operator named these as where the event's type or id lives, so the consumer likely needs them.
    for (const spec of [provider.eventTypeFrom, provider.externalIdFrom]) {
      const name = headerSourceName(spec);
      if (name !== undefined) names.add(name);
    }
  }
  return { names, prefixes, refused };
}

function isCopyable(name: string, selection: DeliveryHeaderSelection): boolean {
  if (NEVER_COPIED.includes(name) || NEVER_COPIED_PREFIXES.some((p) => name.startsWith(p))) return false;
  if (selection.refused.has(name)) return false;
  return selection.names.has(name) || selection.prefixes.some((p) => name.startsWith(p));
}

/** The subset of stored headers safe to send. Any header with a redacted value is dropped whole. */
export function selectStoredHeaders(stored: EventHeaders, selection: DeliveryHeaderSelection): OutgoingHeaders {
  const out: OutgoingHeaders = {};
  for (const [rawName, value] of Object.entries(stored)) {
    const name = rawName.toLowerCase();
    if (!isCopyable(name, selection)) continue;
    const values = typeof value === 'string' ? [value] : (value ?? []);
    if (values.some((v) => v === REDACTED || !SENDABLE_VALUE.test(v))) continue;
    const [first, ...rest] = values;
    if (first === undefined) continue;
    out[name] = rest.length === 0 ? first : [first, ...rest];
  }
  return out;
}

export interface AssembleHeadersInput {
  eventId: string;
  contentType: string | null;
  copied: OutgoingHeaders;
  /** Fresh signature or token headers; they replace any copied header of the same name. */
  credentials: Readonly<Record<string, string>>;
}

export function assembleDeliveryHeaders(input: AssembleHeadersInput): OutgoingHeaders {
  const headers: OutgoingHeaders = { ...input.copied };
  for (const [name, value] of Object.entries(input.credentials)) headers[name.toLowerCase()] = value;
  if (input.contentType !== null && input.contentType !== '' && SENDABLE_VALUE.test(input.contentType)) {
    headers['content-type'] = input.contentType;
  }
  headers[EVENT_ID_HEADER] = input.eventId;
  return headers;
}
