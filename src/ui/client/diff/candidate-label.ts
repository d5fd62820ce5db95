import type { ApiEventSummary } from '../../../../generated/types.ts';
import { formatTime } from '../format.ts';

/** What tells candidates apart in a picker: the type, the summary, then when and where from. */
export function candidateLabel(e: ApiEventSummary): string {
  return [e.event_type || '(no type)', e.summary, `${formatTime(e.received_at)} · ${e.provider} · ${e.id.slice(-8)}`]
    .filter((part) => part !== undefined && part !== '')
    .join(' — ');
}
