/**
 * Timestamps stay exact to the microsecond between PostgreSQL and callers. A JS Date holds only
 * milliseconds, so positions travel as bigint microseconds since the Unix epoch or as canonical
 * RFC 3339 strings, never through Date.
 */
import { sql, type FragmentSqlToken } from 'slonik';
import { invalidArgument } from '../../errors/app-error.ts';

const MICROS_PER_SECOND = 1_000_000n;
const MICROS_PER_DAY = 86_400n * MICROS_PER_SECOND;

/** The range timestamptz and the contract's four-digit years can both represent. */
export const MIN_MICROS = daysFromCivil(1, 1, 1) * MICROS_PER_DAY;
export const MAX_MICROS = (daysFromCivil(9999, 12, 31) + 1n) * MICROS_PER_DAY - 1n;

/** What the database emits for received_at: UTC, always six fractional digits. */
const CANONICAL_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})Z$/;

const ISO_INPUT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/** The to_char format that renders a timestamptz in the canonical form above. */
const CANONICAL_UTC_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

/**
 * A timestamptz expression rendered in SQL as canonical UTC text, so no client-side type parser
 * ever sees (and rounds to milliseconds) the value. The format is SQL text, not a parameter.
 */
export const utcText = (expression: FragmentSqlToken): FragmentSqlToken =>
  sql.fragment`to_char(${expression} AT TIME ZONE 'UTC', ${sql.literalValue(CANONICAL_UTC_FORMAT)})`;

/** A timestamptz column, rendered as by utcText. */
export const utcColumn = (table: string, column: string): FragmentSqlToken =>
  utcText(sql.fragment`${sql.identifier([table, column])}`);

// Howard Hinnant's days_from_civil: proleptic Gregorian, exact for every year we accept.
function daysFromCivil(year: number, month: number, day: number): bigint {
  const y = BigInt(month <= 2 ? year - 1 : year);
  const era = (y >= 0n ? y : y - 399n) / 400n;
  const yoe = y - era * 400n;
  const m = BigInt(month);
  const doy = (153n * (m > 2n ? m - 3n : m + 9n) + 2n) / 5n + BigInt(day) - 1n;
  const doe = yoe * 365n + yoe / 4n - yoe / 100n + doy;
  return era * 146_097n + doe - 719_468n;
}

function civilFromDays(days: bigint): { year: number; month: number; day: number } {
  const z = days + 719_468n;
  const era = (z >= 0n ? z : z - 146_096n) / 146_097n;
  const doe = z - era * 146_097n;
  const yoe = (doe - doe / 1460n + doe / 36_524n - doe / 146_096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const day = doy - (153n * mp + 2n) / 5n + 1n;
  const month = mp < 10n ? mp + 3n : mp - 9n;
  const year = yoe + era * 400n + (month <= 2n ? 1n : 0n);
  return { year: Number(year), month: Number(month), day: Number(day) };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const pad = (value: number | bigint, width: number): string => value.toString().padStart(width, '0');

/** Canonical `YYYY-MM-DDTHH:MM:SS.ffffffZ` for a microsecond instant. */
export function rfc3339FromMicros(micros: bigint): string {
  if (micros < MIN_MICROS || micros > MAX_MICROS) {
    throw new RangeError('timestamp out of range');
  }
  const days = micros >= 0n ? micros / MICROS_PER_DAY : (micros - MICROS_PER_DAY + 1n) / MICROS_PER_DAY;
  const inDay = micros - days * MICROS_PER_DAY;
  const { year, month, day } = civilFromDays(days);
  const seconds = inDay / MICROS_PER_SECOND;
  const fraction = inDay % MICROS_PER_SECOND;
  const hh = seconds / 3600n;
  const mm = (seconds % 3600n) / 60n;
  const ss = seconds % 60n;
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}.${pad(fraction, 6)}Z`;
}

/** Inverse of rfc3339FromMicros; null for anything that is not exactly that shape. */
export function microsFromRfc3339(text: string): bigint | null {
  const m = CANONICAL_UTC.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, us] = m.map(Number) as [number, number, number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59 || y < 1) return null;
  const seconds = BigInt(h * 3600 + mi * 60 + s);
  return daysFromCivil(y, mo, d) * MICROS_PER_DAY + seconds * MICROS_PER_SECOND + BigInt(us);
}

export type Rounding = 'floor' | 'ceil';

/**
 * Reads a caller's ISO-8601 timestamp into microseconds. A date alone is midnight UTC, and a time
 * without an offset is read as UTC rather than in the server's zone, so a query means the same
 * thing wherever switchboard runs. Fractions finer than a microsecond are rounded in the
 * direction that keeps the comparison exact (the column itself has microsecond precision).
 */
export function parseTimestampInput(text: string, field: string, rounding: Rounding): bigint {
  const bad = (): never => {
    throw invalidArgument(`${field} must be an ISO-8601 timestamp such as 2024-05-01T12:00:00Z`);
  };
  const m = ISO_INPUT.exec(text);
  if (!m) return bad();
  const [, ys, mos, ds, hs, mis, ss, fs, zulu, sign, ohs, oms] = m;
  const year = Number(ys);
  const month = Number(mos);
  const day = Number(ds);
  const hour = hs === undefined ? 0 : Number(hs);
  const minute = mis === undefined ? 0 : Number(mis);
  const second = ss === undefined ? 0 : Number(ss);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return bad();
  if (hour > 23 || minute > 59 || second > 59) return bad();
  let offsetMinutes = 0;
  if (zulu === undefined && sign !== undefined) {
    const oh = Number(ohs);
    const om = oms === undefined ? 0 : Number(oms);
    if (oh > 23 || om > 59) return bad();
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const digits = (fs ?? '').padEnd(9, '0');
  const nanos = BigInt(digits);
  let fractionMicros = nanos / 1000n;
  if (rounding === 'ceil' && nanos % 1000n !== 0n) fractionMicros += 1n;
  const local =
    daysFromCivil(year, month, day) * MICROS_PER_DAY +
    BigInt(hour * 3600 + minute * 60 + second) * MICROS_PER_SECOND +
    fractionMicros;
  const micros = local - BigInt(offsetMinutes * 60) * MICROS_PER_SECOND;
  if (micros < MIN_MICROS || micros > MAX_MICROS) return bad();
  return micros;
}
