import type { ApiEventSummary } from '../../../generated/types.ts';
import { localToIso, type EventFilters } from './api-client.ts';

/**
 * Same rule as the store: exact type, or a dotless value also matches its dotted sub-types.
 * @internal outside src/, only tests or benches use it
 */
export function typeMatches(filter: string, eventType: string): boolean {
  const f = filter.trim();
  if (f === '') return true;
  return eventType === f || (!f.includes('.') && eventType.startsWith(`${f}.`));
}

/**
 * Whether a live event belongs in the filtered list. 'unknown' when only the server can tell
 * (full-text search): the caller then re-reads the head of the list instead.
 */
export function liveEventMatches(filters: EventFilters, e: ApiEventSummary): boolean | 'unknown' {
  if (filters.provider && e.provider !== filters.provider) return false;
  if (!typeMatches(filters.eventType, e.event_type)) return false;
  if (filters.verified && String(e.verified) !== filters.verified) return false;
  const received = Date.parse(e.received_at);
  const from = localToIso(filters.from);
  const to = localToIso(filters.to);
  if (from && received < Date.parse(from)) return false;
  if (to && received >= Date.parse(to)) return false;
  if (filters.q.trim()) return 'unknown';
  return true;
}

/** Newest first (received_at, then id, descending), without duplicates: the order /api/events uses. */
export function mergeEvents(
  current: readonly ApiEventSummary[],
  incoming: readonly ApiEventSummary[],
): ApiEventSummary[] {
  const byId = new Map<string, ApiEventSummary>();
  for (const e of current) byId.set(e.id, e);
  for (const e of incoming) byId.set(e.id, e);
  return [...byId.values()].sort((x, y) => {
    const dt = Date.parse(y.received_at) - Date.parse(x.received_at);
    if (dt !== 0) return dt;
    if (x.received_at !== y.received_at) return x.received_at < y.received_at ? 1 : -1;
    return x.id < y.id ? 1 : x.id > y.id ? -1 : 0;
  });
}
