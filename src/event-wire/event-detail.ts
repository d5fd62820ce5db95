/**
 * The one mapping from a stored event to the contract's wire shapes (its summary, its payload in
 * the encoding it travels in, its full detail), so MCP, the HTTP API and the UI cannot disagree
 * about how an event looks. It sits above the store: the store hands out stored events, and what
 * a surface sends is decided here.
 */
import type { ApiEventDetail, EventDetail, EventHeaders, EventPayload } from '../../generated/types.ts';
import type { StoredEvent } from '../store/events/event-store.ts';
import type { SummaryFields } from '../store/events/event-mapping.ts';
import { senderHint } from '../verify/sender-hint.ts';

/** @internal outside src/, only tests or benches use it */
export function toEventSummary(stored: StoredEvent): SummaryFields {
  return {
    id: stored.id,
    provider: stored.provider,
    event_type: stored.eventType,
    trust_mode: stored.trustMode,
    verified: stored.verified,
    payload_size: stored.payloadSize,
    received_at: stored.receivedAt,
  };
}

// ignoreBOM keeps a leading U+FEFF in the text, so encoding the text again yields the same bytes.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * utf8 when the bytes are well-formed UTF-8 (a fatal decoder rejects overlong forms, surrogates and
 * truncated sequences, which is exactly the set that would not re-encode identically), else base64.
 * @internal outside src/, only tests or benches use it
 */
export function toEventPayload(bytes: Buffer): EventPayload {
  try {
    return { encoding: 'utf8', data: strictUtf8.decode(bytes) };
  } catch {
    return { encoding: 'base64', data: bytes.toString('base64') };
  }
}

/**
 * At most maxBytes of the payload, in the encoding the whole payload travels in (a binary body
 * whose first bytes happen to be text stays base64). Text is cut at the last whole UTF-8
 * character within the limit, base64 after exactly maxBytes bytes, so either way what is
 * returned is a prefix of the stored bytes.
 * @internal outside src/, only tests or benches use it
 */
export function limitedPayload(bytes: Buffer, maxBytes: number): { payload: EventPayload; truncated: boolean } {
  const whole = toEventPayload(bytes);
  if (bytes.length <= maxBytes) return { payload: whole, truncated: false };
  if (whole.encoding === 'base64') {
    return { payload: { encoding: 'base64', data: bytes.subarray(0, maxBytes).toString('base64') }, truncated: true };
  }
  let cut = maxBytes;
  // A continuation byte (10xxxxxx) at the cut means a character would be split: step back to its start.
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut -= 1;
  return { payload: { encoding: 'utf8', data: strictUtf8.decode(bytes.subarray(0, cut)) }, truncated: true };
}

/**
 * The full detail. With maxPayloadBytes (get_webhook_event), a longer payload is cut to it and
 * payload_truncated says so, while payload_size still gives the whole stored size.
 */
export function toEventDetail(stored: StoredEvent, options: { maxPayloadBytes?: number } = {}): EventDetail {
  const headers: EventHeaders = { ...stored.headers };
  const { request } = stored;
  const { payload, truncated } =
    options.maxPayloadBytes === undefined
      ? { payload: toEventPayload(stored.payload), truncated: false }
      : limitedPayload(stored.payload, options.maxPayloadBytes);
  return {
    ...toEventSummary(stored),
    ...(stored.summary === null ? {} : { summary: stored.summary }),
    ...(stored.passedCheck === null ? {} : { passed_check: stored.passedCheck }),
    verify_detail: stored.verifyDetail,
    external_id: stored.externalId,
    content_type: stored.contentType,
    source_ip: stored.sourceIp,
    headers,
    payload,
    ...(truncated || stored.receivedSize !== null ? { payload_truncated: true } : {}),
    ...(stored.receivedSize === null ? {} : { received_size: stored.receivedSize }),
    ...(request === null
      ? {}
      : {
          request: {
            method: request.method,
            path: request.path,
            query: request.query,
            response_status: request.responseStatus,
          },
        }),
    ...(stored.reply === undefined ? {} : { reply: stored.reply }),
  };
}

/**
 * The detail as the HTTP API (and so the UI) sends it: an open provider's event whose headers carry
 * a catalog provider's signature header also says who it looks like and what config would check it.
 * Derived from the stored header names (a signature's value is stored redacted; its name is all
 * this reads), so events stored before the hint existed get it too. MCP's detail leaves it out:
 * tools/list, which carries the detail's schema, is near its budget.
 */
export function toApiEventDetail(stored: StoredEvent): ApiEventDetail {
  const detail = toEventDetail(stored);
  const hint = stored.trustMode === 'open' ? senderHint(stored.provider, Object.keys(detail.headers)) : undefined;
  return hint === undefined ? detail : { ...detail, sender_hint: hint };
}
