/**
 * The schema facts code needs at run time (enums, limits, defaults), read from schemas/ so that
 * src/ never restates one, and the "with defaults" shapes the validators leave behind: they are
 * compiled with useDefaults, so a property the schema gives a default is always present after a
 * successful validation, and its type can say so.
 */
import type { JsonObject, JsonValue, SchemaRegistry } from './bundle-schema.ts';

const BASE = 'https://switchboard.dev/schemas/';

/** A named list of allowed values: `file#pointer` to a schema node holding an enum. */
interface EnumFact {
  source: string;
  /** Name of the union type emitted next to it, unless generated/types.ts already has one. */
  type?: string;
  doc: string;
}

/** The bounds and default of one schema node, by name. */
interface ValueFact {
  source: string;
  doc: string;
}

const ENUMS: Record<string, EnumFact> = {
  TRUST_MODES: { source: 'trust-mode.schema.json#', doc: 'How an event is trusted.' },
  PRESET_NAMES: {
    source: 'preset-name.schema.json#',
    type: 'PresetName',
    doc: 'The verification presets a provider can name: the catalog (catalog/<name>/provider.json).',
  },
  HMAC_ALGORITHMS: {
    source: 'config.schema.json#/$defs/provider/properties/hmac/properties/algorithm',
    type: 'HmacAlgorithm',
    doc: 'generic-hmac: the digest algorithms.',
  },
  DIGEST_ENCODINGS: {
    source: 'config.schema.json#/$defs/provider/properties/hmac/properties/encoding',
    type: 'DigestEncoding',
    doc: 'generic-hmac: how a digest is written.',
  },
  TIMESTAMP_FORMATS: {
    source: 'config.schema.json#/$defs/provider/properties/hmac/properties/timestamp_format',
    type: 'TimestampFormat',
    doc: 'generic-hmac: how the signed timestamp is written.',
  },
  SECRET_ENCODINGS: {
    source: 'config.schema.json#/$defs/provider/properties/hmac/properties/secret_encoding',
    type: 'SecretEncoding',
    doc: 'generic-hmac: how a configured secret becomes the key.',
  },
  CONNECTION_STATES: {
    source: 'provider-status.schema.json#/properties/connection',
    type: 'ConnectionState',
    doc: 'A connection as list_providers reports it (Redis for queue providers; the event bus too).',
  },
  QUEUE_MODES: {
    source: 'config.schema.json#/$defs/provider/properties/mode',
    type: 'QueueMode',
    doc: 'How a queue provider reads Redis.',
  },
  ERROR_CODES: {
    source: 'error-envelope.schema.json#/properties/error/properties/code',
    type: 'ErrorCode',
    doc: 'Every code of the error envelope.',
  },
  LIST_ORDERS: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/order',
    type: 'ListOrder',
    doc: 'The orders list_webhook_events and /api/events can page in.',
  },
  REPLAY_ERROR_CODES: {
    source: 'replay-history.schema.json#/properties/attempts/items/properties/error_code/anyOf/0',
    type: 'ReplayErrorCode',
    doc: 'The codes a replay attempt can end with (the MCP tool codes of SPEC-0005).',
  },
  REPLAY_SIGNED: {
    source: 'replay-result.schema.json#/properties/signed',
    type: 'ReplaySigned',
    doc: 'What proves a replay: a fresh signature, the original headers, or nothing.',
  },
  REPLAY_ERROR_REASONS: {
    source: 'replay-history.schema.json#/properties/attempts/items/properties/error_reason',
    type: 'ReplayErrorReason',
    doc: 'Why a replay attempt did not deliver, as the history says it.',
  },
  DELIVERY_STATES: {
    source: 'delivery.schema.json#/properties/state',
    type: 'DeliveryState',
    doc: "A forward delivery's state.",
  },
  SERVER_ROLES: {
    source: 'server-role.schema.json#',
    doc: 'What one switchboard process runs (server.role, --role).',
  },
  PARTITION_UNITS: {
    source: 'partition-unit.schema.json#',
    type: 'PartitionUnit',
    doc: 'The time range one partition of the events table covers (store.partition).',
  },
  FORWARD_STATES: {
    source: 'api-event-summary.schema.json#/properties/forward_state',
    type: 'ForwardState',
    doc: "An event's forwarding across its rules, as the list marks it.",
  },
  REPLY_OUTCOMES: {
    source: 'event-detail.schema.json#/properties/reply/properties/outcome',
    type: 'ReplyOutcome',
    doc: 'How the reply attempt of an event whose provider waited for the app ended.',
  },
};

const VALUES: Record<string, ValueFact> = {
  SERVER_HOST: {
    source: 'config.schema.json#/properties/server/properties/host',
    doc: 'The address bound by default.',
  },
  SERVER_PORT: { source: 'config.schema.json#/properties/server/properties/port', doc: 'The port bound by default.' },
  SERVER_ROLE: {
    source: 'config.schema.json#/properties/server/properties/role',
    doc: 'The role a process runs when neither --role nor server.role names one.',
  },
  STORE_PARTITION: {
    source: 'config.schema.json#/properties/store/properties/partition',
    doc: 'The partition unit when store.partition is not set.',
  },
  RECORD_REJECTED_PER_MINUTE: {
    source: 'config.schema.json#/properties/ingest/properties/record_rejected_per_minute',
    doc: 'Rejected deliveries stored per source (IPv4 address or IPv6 /64) per minute.',
  },
  RECORD_REJECTED_PER_PROVIDER_PER_MINUTE: {
    source: 'config.schema.json#/properties/ingest/properties/record_rejected_per_provider_per_minute',
    doc: 'Rejected deliveries stored per provider per minute, whatever their sources.',
  },
  REPLY_MAX_ANSWER_BYTES: {
    source: 'config.schema.json#/$defs/reply/properties/max_answer_bytes',
    doc: "Largest app's answer passed back to a provider that waits for it.",
  },
  SEARCH_TIMEOUT_MS: {
    source: 'config.schema.json#/properties/api/properties/search_timeout_ms',
    doc: 'How long one payload search may run.',
  },
  TOLERANCE_SECONDS: {
    source: 'config.schema.json#/$defs/provider/properties/tolerance_seconds',
    doc: 'Allowed clock skew of signed timestamps.',
  },
  EVENT_PROVIDER_LIMITS: { source: 'event-summary.schema.json#/properties/provider', doc: 'A provider name.' },
  EVENT_TYPE_LIMITS: { source: 'event-summary.schema.json#/properties/event_type', doc: 'An event type.' },
  EVENT_SUMMARY_LIMITS: {
    source: 'api-event-summary.schema.json#/properties/summary',
    doc: "An event's one-line summary of its payload.",
  },
  LIST_WAIT_MS: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/wait_ms',
    doc: 'How long list_webhook_events may wait for a first matching event.',
  },
  EVENT_REQUEST_METHOD_LIMITS: {
    source: 'event-detail.schema.json#/properties/request/properties/method',
    doc: 'The stored method of the original request.',
  },
  EVENT_REQUEST_PATH_LIMITS: {
    source: 'event-detail.schema.json#/properties/request/properties/path',
    doc: 'The stored path of the original request.',
  },
  EVENT_REQUEST_QUERY_LIMITS: {
    source: 'event-detail.schema.json#/properties/request/properties/query',
    doc: 'The stored (redacted) query string of the original request.',
  },
  EVENT_RESPONSE_STATUS_LIMITS: {
    source: 'event-detail.schema.json#/properties/request/properties/response_status',
    doc: 'The status switchboard answered a sender with, as stored.',
  },
  EXTERNAL_ID_LIMITS: {
    source: 'event-detail.schema.json#/properties/external_id/anyOf/0',
    doc: "A delivery's own id.",
  },
  LIST_LIMIT: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/limit',
    doc: 'Page size of list_webhook_events and /api/events.',
  },
  LIST_SINCE_LIMITS: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/since',
    doc: 'The since filter (a timestamp or an event id).',
  },
  LIST_UNTIL_LIMITS: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/until',
    doc: 'The until filter (a timestamp or an event id).',
  },
  LIST_ORDER: {
    source: 'tools/list-webhook-events.input.schema.json#/properties/order',
    doc: 'The order a list is in when none is asked for.',
  },
  MAX_PAYLOAD_BYTES: {
    source: 'tools/get-webhook-event.input.schema.json#/properties/max_payload_bytes',
    doc: 'How much of a payload get_webhook_event returns.',
  },
  RECENT_EVENTS_LIMITS: {
    source: 'recent-events-resource.schema.json#/properties/events',
    doc: 'The recent-events resource.',
  },
  SEARCH_TEXT_LIMITS: {
    source: 'search-events-query.schema.json#/properties/q',
    doc: '/api/events full-text search.',
  },
  RESPONSE_CONTENT_TYPE_LIMITS: {
    source: 'replay-result.schema.json#/properties/response_content_type',
    doc: "A consumer's Content-Type as replay results and the history keep it.",
  },
  SEARCH_MATCH_LIMITS: {
    source: 'search-events-query.schema.json#/properties/match',
    doc: '/api/events JSON containment filter, as sent.',
  },
  HTTP_STATUS_LIMITS: {
    source: 'replay-result.schema.json#/properties/response_status/anyOf/0',
    doc: "A consumer's HTTP status as replay results and forward attempts keep it.",
  },
  MAX_BODY_BYTES: {
    source: 'config.schema.json#/$defs/provider/properties/max_body_bytes',
    doc: "A provider's largest accepted body; its maximum bounds every stored webhook body.",
  },
  RETRY_AFTER_LIMITS: {
    source: 'error-envelope.schema.json#/properties/error/properties/retry_after',
    doc: 'Seconds to wait before trying again: the longest Retry-After switchboard sends or honours.',
  },
  DELIVERY_ERROR_LIMITS: {
    source: 'delivery.schema.json#/properties/attempts/items/properties/error/anyOf/0',
    doc: 'Why a forward attempt did not deliver, as its record keeps it.',
  },
};

const VALUE_KEYWORDS = ['minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'maxItems', 'default'];

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function node(registry: SchemaRegistry, source: string): JsonObject {
  const [file = '', pointer = ''] = source.split('#');
  const doc = registry.get(`${BASE}${file}`);
  if (doc === undefined) throw new Error(`schema facts: ${file} not found`);
  let current: JsonValue = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    // An anyOf branch is reached by index (…/anyOf/0).
    if (Array.isArray(current) && /^\d+$/.test(key) && Number(key) < current.length) {
      current = current[Number(key)] as JsonValue;
      continue;
    }
    if (!isObject(current) || !(key in current)) throw new Error(`schema facts: ${source} does not resolve`);
    current = current[key] as JsonValue;
  }
  if (!isObject(current)) throw new Error(`schema facts: ${source} is not a schema object`);
  return current;
}

/** generated/constants.ts: enums and limits by name, each with the schema node it comes from. */
export function constantsSource(registry: SchemaRegistry, header: string): string {
  const lines = [header, "import type { TrustMode } from './types.ts';", ''];
  for (const [name, fact] of Object.entries(ENUMS)) {
    const values = node(registry, fact.source).enum;
    if (!Array.isArray(values)) throw new Error(`schema facts: ${fact.source} has no enum`);
    const defined = values.filter((v) => v !== null);
    lines.push(`/** ${fact.doc} From schemas/${fact.source}. */`);
    const declared = name === 'TRUST_MODES' ? ' satisfies readonly TrustMode[]' : '';
    lines.push(`export const ${name} = ${JSON.stringify(defined)} as const${declared};`);
    if (fact.type !== undefined) lines.push(`export type ${fact.type} = (typeof ${name})[number];`);
    lines.push('');
  }
  for (const [name, fact] of Object.entries(VALUES)) {
    const schema = node(registry, fact.source);
    const bounds = Object.fromEntries(VALUE_KEYWORDS.filter((k) => k in schema).map((k) => [k, schema[k]]));
    if (Object.keys(bounds).length === 0) throw new Error(`schema facts: ${fact.source} states no bound`);
    lines.push(`/** ${fact.doc} From schemas/${fact.source}. */`);
    lines.push(`export const ${name} = ${JSON.stringify(bounds)} as const;`);
    lines.push('');
  }
  return lines.join('\n');
}

/** Keywords whose subschemas apply only sometimes: a default inside them is not always filled. */
const CONDITIONAL = new Set(['if', 'then', 'else', 'not', 'anyOf', 'oneOf']);

function hasDefaults(value: JsonValue): boolean {
  if (Array.isArray(value)) return value.some(hasDefaults);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, sub]) => key === 'default' || (!CONDITIONAL.has(key) && hasDefaults(sub)));
}

const pascal = (key: string): string =>
  key.replace(/(^|[-_])([a-z])/g, (_m, _sep: string, letter: string) => letter.toUpperCase());

function requireDefaulted(value: JsonValue, inDefs: boolean): JsonValue {
  if (Array.isArray(value)) return value.map((v) => requireDefaulted(v, false));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, sub] of Object.entries(value)) {
    // Conditional subschemas say nothing about every instance; types leave them out.
    if (CONDITIONAL.has(key) && key !== 'anyOf' && key !== 'oneOf') continue;
    if (key === '$defs' && isObject(sub)) {
      out[key] = Object.fromEntries(
        Object.entries(sub).map(([name, def]) => {
          // Named only where defaults change it; the rest stays inline, as in the plain types.
          if (!hasDefaults(def)) return [name, def];
          const copied = requireDefaulted(def, true) as JsonObject;
          return [name, { ...copied, title: `${pascal(name)}WithDefaults` }];
        }),
      );
    } else if (key === 'properties' && isObject(sub)) {
      out[key] = Object.fromEntries(Object.entries(sub).map(([name, prop]) => [name, requireDefaulted(prop, false)]));
    } else {
      out[key] = requireDefaulted(sub, false);
    }
  }
  const properties = value.properties;
  if (isObject(properties)) {
    const filled = Object.entries(properties)
      .filter(([, prop]) => isObject(prop) && 'default' in prop)
      .map(([name]) => name);
    const required = Array.isArray(value.required) ? value.required.filter((r) => typeof r === 'string') : [];
    const all = [...new Set([...required, ...filled])];
    if (all.length > 0) out.required = all;
  }
  if (inDefs) delete out.description;
  return out;
}

/**
 * For each schema that gives any property a default, the same schema with those properties
 * required and a title ending in WithDefaults: what a useDefaults validator hands back.
 */
export function withDefaultsSchemas(schemas: readonly { file: string; schema: JsonObject }[]): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const { file, schema } of schemas) {
    if (!hasDefaults(schema)) continue;
    const title = schema.title;
    if (typeof title !== 'string') throw new Error(`${file}: every schema needs a title`);
    const copy = requireDefaulted(schema, false) as JsonObject;
    out.set(file, { ...copy, title: `${title}WithDefaults` });
  }
  return out;
}
