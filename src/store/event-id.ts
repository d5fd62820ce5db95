/** The event id's form lives in shared/, where `switchboard listen` reads it too; the store's modules import it from here. */
export { isEventId, normalizeEventId } from '../shared/event-id.ts';
