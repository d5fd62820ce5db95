/**
 * EventSummary as MCP sends it: the summary fields, plus the one line the UI shows for the event,
 * cut where the whole summary would pass EVENT_SUMMARY_BUDGET_BYTES of JSON, so a page of 50 stays
 * cheap in an agent's context however long the line (test/mcp/context-budget.test.ts). The cut
 * counts bytes of JSON text, escapes included, not characters: a line of CJK or emoji costs an
 * agent three or four times what its length says. An event whose other fields leave almost no
 * room still gets MIN_SUMMARY_BYTES of its line: a summary that says nothing would be worse.
 */
import type { ApiEventSummary, EventSummary } from '../../generated/types.ts';

/**
 * What one EventSummary may cost an agent, as issue 17 (MCP for agents) set it.
 * @internal outside src/, only tests or benches use it
 */
export const EVENT_SUMMARY_BUDGET_BYTES = 300;
/**
 * The least of its line an event's summary keeps, whatever its other fields cost.
 * @internal outside src/, only tests or benches use it
 */
export const MIN_SUMMARY_BYTES = 32;

const ELLIPSIS = '…';

/** Bytes the text takes inside a JSON string: UTF-8, with the escapes JSON.stringify writes. */
const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text)) - 2;

/**
 * The line as it is when it takes at most maxBytes of JSON text, else its longest prefix of whole
 * characters that fits with a closing …; null when there is no line.
 */
function cutSummaryLine(line: string | null | undefined, maxBytes: number): string | null {
  if (line === null || line === undefined || line === '') return null;
  if (jsonBytes(line) <= maxBytes) return line;
  const budget = maxBytes - jsonBytes(ELLIPSIS);
  let used = 0;
  let cut = '';
  for (const char of line) {
    const bytes = jsonBytes(char);
    if (used + bytes > budget) break;
    used += bytes;
    cut += char;
  }
  return `${cut.trimEnd()}${ELLIPSIS}`;
}

/** The HTTP API's list entry as MCP lists it: the same fields, the line cut to the budget, null when absent. */
export function toMcpEventSummary(event: ApiEventSummary): EventSummary {
  const fields = {
    id: event.id,
    provider: event.provider,
    event_type: event.event_type,
    trust_mode: event.trust_mode,
    verified: event.verified,
    payload_size: event.payload_size,
    received_at: event.received_at,
  };
  const withoutLine = Buffer.byteLength(JSON.stringify({ ...fields, summary: '' }));
  const room = Math.max(MIN_SUMMARY_BYTES, EVENT_SUMMARY_BUDGET_BYTES - withoutLine);
  return { ...fields, summary: cutSummaryLine(event.summary, room) };
}
