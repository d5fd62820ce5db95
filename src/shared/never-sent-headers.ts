/**
 * The headers a delivery from switchboard never carries over from what it was handed: the server's
 * outbound path (replay and forwarding, copying stored headers) and `switchboard listen` (copying
 * what its server's replay-headers answer lists) both apply this one list, so the two cannot
 * drift apart. Credentials are added afterwards by whoever signs, never copied.
 */

/** Marks every replayed or forwarded request, so a consumer (or its logs) can tell it from a live delivery. */
export const REPLAY_MARKER_HEADER = 'x-switchboard-replay';

/**
 * Never copied, whatever an allow-list or `event_type_from: header:<Name>` says:
 * - hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, not the event;
 * - credentials any request may carry (authorization, cookie, proxy-authorization);
 * - what the sender's own request sets: host, content-length (from the body sent),
 *   content-type (from the event's stored type), content-encoding, expect;
 * - what proxies add about the original sender (forwarded, x-real-ip, and the prefixes below);
 * - the marker, which the sender sets to the event's own id.
 */
export const NEVER_SENT_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'authorization',
  'cookie',
  'proxy-authorization',
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'expect',
  'forwarded',
  'x-real-ip',
  REPLAY_MARKER_HEADER,
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
