import type { EventPayload, EventReply } from '../../../generated/types.ts';

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** Local wall-clock time; the date only when it is not today, so the list stays scannable. */
export function formatTime(iso: string, now: Date = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const sameDay =
    d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  return sameDay ? time : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

/** Full local timestamp with milliseconds, for detail views. */
export function formatFullTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/**
 * How long ago, as a person says it: "just now", "42 s ago", "2 min ago", "3 h ago", "5 d ago";
 * beyond a week the date and time instead. A small negative age is "just now" too: the list's
 * clock ticks every few seconds, so a live row is often ahead of the `now` it is drawn with, and
 * the server's clock may run a little ahead of the browser's. Only a clock that disagrees by a
 * minute or more shows the time rather than "in the future".
 */
/** How far ahead of the browser's clock a time may be and still read "just now". */
const FUTURE_TOLERANCE_SECONDS = 60;

export function formatRelative(iso: string, now: number = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.floor((now - at) / 1000);
  if (seconds <= -FUTURE_TOLERANCE_SECONDS || seconds >= 7 * 86_400) return formatTime(iso, new Date(now));
  if (seconds < 10) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

/** The browser's offset from UTC at that moment, as UTC+02:00 (or UTC when it is zero). */
function utcOffset(d: Date): string {
  const minutes = -d.getTimezoneOffset();
  if (minutes === 0) return 'UTC';
  const sign = minutes > 0 ? '+' : '−';
  const abs = Math.abs(minutes);
  return `UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** The browser's time zone name (Europe/Berlin), or null when it does not say. */
function zoneName(): string | null {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || null;
  } catch {
    return null;
  }
}

/**
 * A stored time as the detail shows it: the local date, the time with milliseconds and the zone
 * (`2025-06-10 14:05:03.123 UTC+02:00 (Europe/Berlin)`), and the exact UTC time the server keeps
 * (with its microseconds) for the tooltip.
 */
export function formatZonedTime(iso: string): { local: string; utc: string } {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return { local: iso, utc: iso };
  // A zone that is UTC by another name would only repeat the offset: "… UTC", never "UTC (UTC)".
  const name = zoneName();
  const zone = name !== null && /^(Etc\/)?(UTC|UCT|GMT|Universal|Zulu)$/i.test(name) ? null : name;
  const utcParts = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z$/.exec(iso);
  return {
    local: `${formatFullTime(iso)} ${utcOffset(d)}${zone === null ? '' : ` (${zone})`}`,
    utc: utcParts ? `${utcParts[1]} ${utcParts[2]} UTC` : d.toISOString(),
  };
}

/** datetime-local input value for a Date, in the browser's zone. */
export function toLocalInput(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The payload as a JSON value when it is JSON text; undefined otherwise. */
export function parseJsonPayload(payload: EventPayload): { value: unknown } | undefined {
  if (payload.encoding !== 'utf8') return undefined;
  const first = payload.data.trimStart()[0];
  if (first !== '{' && first !== '[') return undefined;
  try {
    return { value: JSON.parse(payload.data) as unknown };
  } catch {
    return undefined;
  }
}

/** Pretty JSON with object keys sorted, so two payloads diff by content rather than key order. */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value), null, 2);
}

export function extensionFor(contentType: string | null): string {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type.endsWith('json')) return 'json';
  if (type.endsWith('xml')) return 'xml';
  if (type === 'application/x-www-form-urlencoded' || type.startsWith('text/')) return 'txt';
  return 'bin';
}

/** Words for how a provider that waited for the app's reply was answered (EventDetail.reply). */
const REPLY_WORDS: Readonly<Record<EventReply['outcome'], string>> = {
  answered: 'answered',
  timed_out: 'timed out: fallback sent',
  unavailable: 'app unreachable: fallback sent',
  failed: 'unusable answer: fallback sent',
};

/** The reply's line in the event facts: "answered 200 in 12 ms", "timed out: fallback sent after 2500 ms". */
export function formatReply(reply: EventReply): string {
  const status = reply.response_status === undefined ? '' : ` ${reply.response_status}`;
  const ms = Math.round(reply.response_ms);
  return reply.outcome === 'answered'
    ? `answered${status} in ${ms} ms`
    : `${REPLY_WORDS[reply.outcome]} after ${ms} ms`;
}
