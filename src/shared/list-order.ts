/**
 * The event list's order, (received_at, id), which /api/events sorts by and its `since` and
 * `cursor` compare with. The server's stream and `switchboard listen` both keep a place in it.
 */

/** An event's place in the list: its received_at (RFC 3339, as the server writes it) and its id. */
export interface ListPlace {
  received_at: string;
  id: string;
}

/** Whether `a` comes before `b` in the list's order. */
export function isBefore(a: ListPlace, b: ListPlace): boolean {
  const at = Date.parse(a.received_at);
  const bt = Date.parse(b.received_at);
  if (at !== bt) return at < bt;
  // Same millisecond: the server writes both in one format, so the text orders the microseconds too.
  if (a.received_at !== b.received_at) return a.received_at < b.received_at;
  return a.id < b.id;
}
