import type { QueueProviderConfig } from '../config/resolve-config.ts';
import { sanitizeHeaders } from '../sanitize/sanitize-headers.ts';
import { cleanEventType, cleanExternalId } from '../sanitize/clean-identifier.ts';
import { LazyBody, parseFieldSource, readFieldSource, type FieldSource } from '../verify/identify.ts';
import { genericSummary } from '../verify/summary.ts';
import type { NewEvent } from '../store/events/event-store.ts';

/** Stream fields whose value is taken as the message body, in order of preference. */
const STREAM_PAYLOAD_FIELDS = ['payload', 'data'] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * How a queue provider names and identifies its messages. For queue providers `header:<name>`
 * reads the message's metadata fields (see below); a JSON pointer reads the payload.
 */
export interface QueueIdentitySources {
  eventTypeFrom: FieldSource | undefined;
  externalIdFrom: FieldSource | undefined;
}

export function queueIdentitySources(provider: QueueProviderConfig): QueueIdentitySources {
  return {
    eventTypeFrom:
      provider.eventTypeFrom === undefined ? undefined : parseFieldSource(provider.eventTypeFrom, 'event_type_from'),
    externalIdFrom:
      provider.externalIdFrom === undefined ? undefined : parseFieldSource(provider.externalIdFrom, 'external_id_from'),
  };
}

export interface QueueMessage {
  /** Metadata as name/value pairs in order (like Node's rawHeaders), stored as the event's headers. */
  fields: string[];
  payload: Buffer;
  verifyDetail: string;
  /** Used when event_type_from is unset or finds nothing: the channel or stream the message came on. */
  fallbackEventType: string;
  /** Used when external_id_from is unset or finds nothing: the stream entry id; pub/sub has none. */
  fallbackExternalId: string | null;
}

export function queueEvent(
  provider: QueueProviderConfig,
  sources: QueueIdentitySources,
  message: QueueMessage,
): NewEvent {
  const headers = sanitizeHeaders(message.fields, { dropHopByHop: false });
  const lazy = new LazyBody(message.payload);
  const read = (source: FieldSource | undefined, clean: (value: string) => string | null): string | null => {
    if (source === undefined) return null;
    const value = readFieldSource(source, lazy, headers);
    return value === null ? null : clean(value);
  };
  const eventType =
    read(sources.eventTypeFrom, cleanEventType) ?? cleanEventType(message.fallbackEventType) ?? 'unknown';
  return {
    provider: provider.name,
    eventType,
    trustMode: 'queue',
    verified: false,
    verifyDetail: message.verifyDetail,
    externalId: read(sources.externalIdFrom, cleanExternalId) ?? message.fallbackExternalId,
    // A parsed object or array is JSON already; only other bodies need the full check.
    contentType: lazy.json !== undefined || isJson(message.payload) ? 'application/json' : 'application/octet-stream',
    sourceIp: null,
    headers,
    payload: message.payload,
    // A queue message has no sender-specific shape: its first few text fields, leaving out the
    // one that names it.
    summary: genericSummary(lazy.json, eventType),
  };
}

/**
 * Any JSON value counts (a bare number or string too), as long as the bytes are valid UTF-8.
 * @internal outside src/, only tests or benches use it
 */
export function isJson(payload: Buffer): boolean {
  if (payload.length === 0) return false;
  try {
    JSON.parse(utf8.decode(payload));
    return true;
  } catch {
    return false;
  }
}

export interface StreamEntryPayload {
  payload: Buffer;
  /** Field name/value pairs other than the payload field, as text. */
  fields: string[];
}

/**
 * A stream entry's body: the raw bytes of its `payload` (else `data`) field, so binary and
 * pre-serialised JSON pass through untouched; without either field, the whole entry as a JSON
 * object of its fields (text, last duplicate name wins). Every other field becomes metadata.
 */
export function streamEntryPayload(rawFields: readonly Buffer[]): StreamEntryPayload {
  const pairs: [string, Buffer][] = [];
  for (let i = 0; i + 1 < rawFields.length; i += 2) {
    const name = rawFields[i];
    const value = rawFields[i + 1];
    if (name !== undefined && value !== undefined) pairs.push([name.toString('utf8'), value]);
  }
  let payloadIndex = -1;
  for (const wanted of STREAM_PAYLOAD_FIELDS) {
    payloadIndex = pairs.findIndex(([name]) => name === wanted);
    if (payloadIndex !== -1) break;
  }
  const fields = pairs.filter((_, i) => i !== payloadIndex).flatMap(([name, value]) => [name, value.toString('utf8')]);
  const chosen = payloadIndex === -1 ? undefined : pairs[payloadIndex];
  if (chosen !== undefined) return { payload: chosen[1], fields };
  const whole = Object.fromEntries(pairs.map(([name, value]) => [name, value.toString('utf8')]));
  return { payload: Buffer.from(JSON.stringify(whole), 'utf8'), fields };
}
