/** The events table refuses longer event types (CHECK char_length(event_type) <= 200). */
export const MAX_EVENT_TYPE_LENGTH = 200;
/** Keeps (provider, external_id) well inside a btree index entry's ~2700-byte limit. */
export const MAX_EXTERNAL_ID_LENGTH = 500;

/**
 * Event types and external ids come from untrusted bodies and messages: NUL cannot be stored in a
 * PostgreSQL text column, and an over-long value would violate a constraint; either would fail the
 * whole group-committed batch the event travels in. Null when nothing usable is left.
 */
export function cleanIdentifier(value: string, maxLength: number): string | null {
  const cleaned = value.replaceAll('\u0000', '').slice(0, maxLength);
  return cleaned === '' ? null : cleaned;
}

export const cleanEventType = (value: string): string | null => cleanIdentifier(value, MAX_EVENT_TYPE_LENGTH);
export const cleanExternalId = (value: string): string | null => cleanIdentifier(value, MAX_EXTERNAL_ID_LENGTH);
