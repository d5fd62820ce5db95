import { invalidArgument } from '../errors/app-error.ts';
import { headerValue } from './headers.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, Identify } from './preset-types.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as JSON, or undefined. Bodies are arbitrary bytes (binary, form-encoded, truncated), and
 * identify() runs on every delivery, including rejected ones, so it must never throw. Invalid UTF-8
 * is rejected outright rather than parsed with replacement characters, which could otherwise turn
 * garbage into a plausible-looking event type.
 */
export function parseJsonBody(body: Buffer): unknown {
  const first = body.findIndex((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d);
  // Skip the decode entirely for bodies that cannot be a JSON object or array (the only shapes
  // that carry identity); a UTF-8 BOM (0xef) is allowed through because the decoder strips it.
  const lead = first === -1 ? undefined : body[first];
  if (lead !== 0x7b && lead !== 0x5b && lead !== 0xef) return undefined;
  try {
    return JSON.parse(utf8.decode(body)) as unknown;
  } catch {
    return undefined;
  }
}

/** A string or number usable as an event type or id; anything else (objects, empty strings) is not. */
export function asIdentifier(value: unknown): string | null {
  if (typeof value === 'string') return value.length > 0 ? value : null;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 6901 JSON pointer lookup; undefined when any step is missing. */
export function resolveJsonPointer(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  const tokens = pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
  let current: unknown = doc;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (isRecord(current)) {
      if (!Object.hasOwn(current, token)) return undefined;
      current = current[token];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * Where to read an event type or external id from, as written in provider config:
 * `header:<Name>` reads a header, a JSON pointer such as `/type` or `/data/object/id` reads the body.
 */
export type FieldSource = { kind: 'header'; name: string } | { kind: 'pointer'; pointer: string };

export function parseFieldSource(spec: string, option: string): FieldSource {
  if (spec.startsWith('header:')) {
    const name = spec.slice('header:'.length).trim();
    if (name === '' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw invalidArgument(`${option}: "${spec}" names no valid header; write header:<Name>`);
    }
    return { kind: 'header', name };
  }
  if (spec.startsWith('/')) return { kind: 'pointer', pointer: spec };
  throw invalidArgument(`${option}: "${spec}" must be header:<Name> or a JSON pointer starting with /`);
}

/**
 * A delivery's bytes with their JSON parse, done at most once and only if something asks for it.
 * Ingest hands one to identify() and then to summarize(), so the two share a single parse.
 */
export class LazyBody implements DeliveryBody {
  private parsed = false;
  private value: unknown;

  constructor(readonly bytes: Buffer) {}

  get json(): unknown {
    if (!this.parsed) {
      this.value = parseJsonBody(this.bytes);
      this.parsed = true;
    }
    return this.value;
  }
}

export function readFieldSource(source: FieldSource, body: DeliveryBody, headers: HeaderBag): string | null {
  if (source.kind === 'header') return asIdentifier(headerValue(headers, source.name));
  return asIdentifier(resolveJsonPointer(body.json, source.pointer));
}

/** Headers that generic senders commonly use to name the event, tried in order. */
const EVENT_TYPE_HEADERS = ['x-event-type', 'x-event', 'x-webhook-event', 'x-event-name'] as const;

/**
 * Fallback identity for presets that know nothing about the sender: an event-type-ish header, then
 * the body's `type`, else "unknown". There is no safe generic guess for an external id.
 */
export function genericIdentity(body: DeliveryBody, headers: HeaderBag): EventIdentity {
  for (const name of EVENT_TYPE_HEADERS) {
    const fromHeader = asIdentifier(headerValue(headers, name));
    if (fromHeader !== null) return { eventType: fromHeader, externalId: null };
  }
  const json = body.json;
  const fromBody = isRecord(json) ? asIdentifier(json['type']) : null;
  return { eventType: fromBody ?? 'unknown', externalId: null };
}

export interface IdentityOverrides {
  eventTypeFrom?: FieldSource | undefined;
  externalIdFrom?: FieldSource | undefined;
}

/**
 * Applies configured event_type_from / external_id_from on top of a preset's own identify().
 * A configured source that finds nothing in a particular delivery falls back to the preset's
 * answer rather than to "unknown", so one odd delivery does not lose information the preset has.
 */
export function withIdentityOverrides(base: Identify, overrides: IdentityOverrides): Identify {
  const { eventTypeFrom, externalIdFrom } = overrides;
  if (eventTypeFrom === undefined && externalIdFrom === undefined) return base;
  return (body, headers, parsed) => {
    const lazy = parsed ?? new LazyBody(body);
    const eventType = eventTypeFrom === undefined ? null : readFieldSource(eventTypeFrom, lazy, headers);
    const externalId = externalIdFrom === undefined ? null : readFieldSource(externalIdFrom, lazy, headers);
    if (eventType !== null && externalId !== null) return { eventType, externalId };
    const fallback = base(body, headers, lazy);
    return { eventType: eventType ?? fallback.eventType, externalId: externalId ?? fallback.externalId };
  };
}
