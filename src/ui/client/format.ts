import type { EventPayload } from '../../../generated/types.ts';

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

/** datetime-local input value for a Date, in the browser's zone. */
export function toLocalInput(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function decodePayload(payload: EventPayload): Uint8Array {
  if (payload.encoding === 'utf8') return new TextEncoder().encode(payload.data);
  const bin = atob(payload.data);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
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
