import type { EventDetail } from '../../../../generated/types.ts';
import { EMPTY_FILTERS, familyOf, type ApiClient } from '../api-client.ts';
import { useLoaded } from '../hooks/use-polled.ts';

/**
 * The event of the same family received just before this one (else the newest other one), for
 * "Compare": pull_request.closed against the pull_request.opened that came before it.
 */
async function compareCandidate(api: ApiClient, event: EventDetail): Promise<string | null> {
  const family = familyOf(event.event_type);
  if (family === '') return null;
  const filters = { ...EMPTY_FILTERS, eventType: family };
  const [older] = (await api.listEvents(filters, undefined, 1, event.received_at)).events;
  if (older !== undefined) return older.id;
  return (await api.listEvents(filters, undefined, 2)).events.find((e) => e.id !== event.id)?.id ?? null;
}

export function useCompareCandidate(api: ApiClient, event: EventDetail | null): string | null {
  const { value } = useLoaded(
    () => (event === null ? Promise.resolve(null) : compareCandidate(api, event)),
    [api, event?.id],
    'Could not load events to compare with.',
  );
  return value;
}
