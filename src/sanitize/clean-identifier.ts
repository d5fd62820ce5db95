import { EVENT_TYPE_LIMITS, EXTERNAL_ID_LIMITS } from '../../generated/constants.ts';

/**
 * Event types and external ids come from untrusted bodies and messages: NUL cannot be stored in a
 * PostgreSQL text column, and an over-long value would violate a constraint; either would fail the
 * whole group-committed batch the event travels in. Null when nothing usable is left.
 */
function cleanIdentifier(value: string, maxLength: number): string | null {
  const cleaned = value.replaceAll('\u0000', '').slice(0, maxLength);
  return cleaned === '' ? null : cleaned;
}

/** The contract's bound, which the events table enforces too (CHECK char_length(event_type) <= 200). */
export const cleanEventType = (value: string): string | null => cleanIdentifier(value, EVENT_TYPE_LIMITS.maxLength);
/**
 * The contract's bound: a longer stored id would make get_webhook_event's result break its own
 * schema. It also keeps (provider, external_id) well inside a btree index entry's ~2700 bytes.
 */
export const cleanExternalId = (value: string): string | null => cleanIdentifier(value, EXTERNAL_ID_LIMITS.maxLength);
