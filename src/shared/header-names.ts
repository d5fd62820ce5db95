/**
 * Header facts the server's storage, its sending path and `switchboard listen` share, in one place
 * so they cannot drift apart: which headers describe a connection rather than an event, which carry
 * credentials on any request, and which a delivery from switchboard never carries over from what
 * it was handed (the outbound path copying stored headers, listen copying what its server's
 * replay-headers answer lists). Credentials are added afterwards by whoever signs, never copied.
 */

/** Connection-level headers (RFC 9110 §7.6.1): they describe one hop, not the event. */
export const HOP_BY_HOP_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
];

/** Credentials that may ride on any request, whatever the provider. */
export const ALWAYS_SENSITIVE_HEADERS: readonly string[] = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * Names the stored event on every request the sending path makes, replayed or forwarded (and on
 * every one listen makes), so a consumer or its logs can tell it from a provider's own delivery.
 * The header's name is the wire contract's since replay came first.
 */
export const EVENT_ID_HEADER = 'x-switchboard-replay';

/**
 * Never copied, whatever an allow-list, `event_type_from: header:<Name>` or a server's answer
 * says: hop-by-hop headers and credentials; what the sending request sets itself (host,
 * content-length from the body sent, content-type from the event's stored type, content-encoding,
 * expect, the event id header); what proxies add about the original sender (forwarded,
 * x-real-ip and the prefixes below).
 */
export const NEVER_SENT_HEADERS: readonly string[] = [
  ...HOP_BY_HOP_HEADERS,
  ...ALWAYS_SENSITIVE_HEADERS,
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'expect',
  'forwarded',
  'x-real-ip',
  EVENT_ID_HEADER,
];

export const NEVER_SENT_PREFIXES: readonly string[] = ['x-forwarded-', 'proxy-'];

/** Whether a (lower-cased) header name is on the never-sent list. */
export function isNeverSent(name: string): boolean {
  return NEVER_SENT_HEADERS.includes(name) || NEVER_SENT_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/**
 * A header value that can go on the wire: undici refuses control characters, so a value holding
 * one (stored headers cannot, a server's answer might) is dropped rather than failing the request.
 */
export const SENDABLE_HEADER_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;
