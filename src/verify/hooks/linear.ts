import { isRecord } from '../identify.ts';
import type { DeliveryBody, ProviderHooks } from '../preset-types.ts';
import { at, firstLine, summaryLine } from '../summary.ts';

/** The issue (or other entity) by its identifier and title, e.g. `ENG-123 · Checkout fails`. */
function summarizeLinear(body: DeliveryBody): string | null {
  const data = at(body.json, 'data');
  if (!isRecord(data)) return null;
  return summaryLine([data['identifier'], data['title'] ?? data['name'] ?? firstLine(data['body'])]);
}

/**
 * Linear: hex HMAC-SHA256 of the raw body in Linear-Signature, on the hmac engine
 * (catalog/linear/provider.json). The timestamp is not a header but the body's `webhookTimestamp`
 * (ms), which the engine checks once the signature passed. A re-signed replay carries only a new
 * signature: the stored bytes, and so their webhookTimestamp, are sent exactly, and a receiver that
 * checks it (this preset included) judges a replay older than its tolerance stale.
 */
export const linearHooks: ProviderHooks = { summarize: summarizeLinear };
