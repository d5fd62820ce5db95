import { headerValue } from './headers.ts';
import { asIdentifier, isRecord, LazyBody } from './identify.ts';
import type { DeliveryBody, EventIdentity, HeaderBag } from './preset-types.ts';
import { catalogHmacPreset } from './schemes/hmac-scheme.ts';
import { at, firstLine, summaryLine } from './summary.ts';

/**
 * `Issue.create` style from the body's `type` and `action`. The external id is the
 * Linear-Delivery header (one per delivery); the body's `webhookId` names the webhook
 * subscription and is the same for every delivery, so it would make every event look like a
 * duplicate.
 */
export function identifyLinear(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  const type = isRecord(json) ? asIdentifier(json['type']) : null;
  const action = isRecord(json) ? asIdentifier(json['action']) : null;
  const eventType = type === null ? 'unknown' : action === null ? type : `${type}.${action}`;
  return { eventType, externalId: asIdentifier(headerValue(headers, 'linear-delivery')) };
}

/** The issue (or other entity) by its identifier and title, e.g. `ENG-123 · Checkout fails`. */
export function summarizeLinear(body: DeliveryBody): string | null {
  const data = at(body.json, 'data');
  if (!isRecord(data)) return null;
  return summaryLine([data['identifier'], data['title'] ?? data['name'] ?? firstLine(data['body'])]);
}

/**
 * Linear: hex HMAC-SHA256 of the raw body in Linear-Signature, on the shared engine
 * (schemas/providers/linear.json). The timestamp is not a header but the body's `webhookTimestamp`
 * (ms), which the engine checks once the signature passed. A re-signed replay carries only a new
 * signature: the stored bytes, and so their webhookTimestamp, are sent exactly, and a receiver that
 * checks it (this preset included) judges a replay older than its tolerance stale.
 */
export const linearPreset = catalogHmacPreset('linear', { identify: identifyLinear, summarize: summarizeLinear });
