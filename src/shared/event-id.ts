/** An event id: a UUID (switchboard writes v7; any version is read), hyphenated, any case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isEventId(text: string): boolean {
  return UUID.test(text);
}

/** The lower-cased id, or null when the text is not one. */
export function normalizeEventId(text: string): string | null {
  return UUID.test(text) ? text.toLowerCase() : null;
}
