/**
 * The claim's rows, read without a zod schema. Claiming runs for every forwarded delivery, and
 * validating each row's event (its headers object and payload included) with the detail schema
 * was a measurable share of a delivery's CPU. The claim statement names every column itself, so a
 * check of each value's type at the point of use still fails loudly if the query and the mapping
 * ever drift apart, at a fraction of the cost.
 */
import type { QueryResultRow } from 'slonik';
import { TRUST_MODES } from '../../../generated/constants.ts';
import type { TrustMode } from '../../../generated/types.ts';
import { storedEventFromRow, type DetailRow } from '../events/event-mapping.ts';
import type { StoredEvent } from '../events/event-store.ts';

/** A claimed delivery's own columns and its event, as the claim statement returns them. */
export interface ClaimedRow {
  deliveryId: string;
  rule: string;
  attempt: number;
  budgetStart: number;
  seq: number;
  event: StoredEvent;
}

function drift(column: string, expected: string, value: unknown): never {
  throw new TypeError(`claim row: ${column} is not ${expected} (got ${value === null ? 'null' : typeof value})`);
}

function text(row: QueryResultRow, column: string): string {
  const value = row[column];
  return typeof value === 'string' ? value : drift(column, 'text', value);
}

function textOrNull(row: QueryResultRow, column: string): string | null {
  const value = row[column];
  return value === null || typeof value === 'string' ? value : drift(column, 'text or null', value);
}

function integer(row: QueryResultRow, column: string): number {
  const value = row[column];
  // bigint columns (seq) come back as a bigint; every value here is far below 2^53.
  const number = typeof value === 'bigint' ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) ? number : drift(column, 'an integer', value);
}

function integerOrNull(row: QueryResultRow, column: string): number | null {
  return row[column] === null ? null : integer(row, column);
}

function flag(row: QueryResultRow, column: string): boolean {
  const value = row[column];
  return typeof value === 'boolean' ? value : drift(column, 'a boolean', value);
}

function flagOrNull(row: QueryResultRow, column: string): boolean | null {
  return row[column] === null ? null : flag(row, column);
}

function trustMode(row: QueryResultRow): TrustMode {
  const value = row.trust_mode;
  return TRUST_MODES.find((mode) => mode === value) ?? drift('trust_mode', 'a trust mode', value);
}

type StoredHeaders = DetailRow['headers'];

/** Written only by the store, from sanitized headers: a string, or a list of strings, per name. */
function isStoredHeaders(value: unknown): value is StoredHeaders {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Buffer.isBuffer(value)) return false;
  return Object.values(value).every(
    (v) => typeof v === 'string' || (Array.isArray(v) && v.every((item) => typeof item === 'string')),
  );
}

function headers(row: QueryResultRow): StoredHeaders {
  const value = row.headers;
  return isStoredHeaders(value) ? value : drift('headers', 'a headers object', value);
}

function payload(row: QueryResultRow): Buffer {
  const value = row.payload;
  return Buffer.isBuffer(value) ? value : drift('payload', 'bytea', value);
}

const isRow = (value: unknown): value is QueryResultRow =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One row of the claim (sql.unsafe: no schema parse), checked column by column as it is read. */
export function claimedRowFrom(value: unknown): ClaimedRow {
  const row = isRow(value) ? value : drift('a claim row', 'an object', value);
  return {
    deliveryId: text(row, 'delivery_id'),
    rule: text(row, 'rule'),
    attempt: integer(row, 'attempt_count'),
    budgetStart: integer(row, 'budget_start'),
    seq: integer(row, 'seq'),
    event: storedEventFromRow({
      id: text(row, 'id'),
      provider: text(row, 'provider'),
      event_type: text(row, 'event_type'),
      trust_mode: trustMode(row),
      verified: flag(row, 'verified'),
      payload_size: integer(row, 'payload_size'),
      received_at_utc: text(row, 'received_at_utc'),
      summary: textOrNull(row, 'summary'),
      passed_check: flagOrNull(row, 'passed_check'),
      received_size: integerOrNull(row, 'received_size'),
      verify_detail: text(row, 'verify_detail'),
      external_id: textOrNull(row, 'external_id'),
      content_type: textOrNull(row, 'content_type'),
      source_ip: textOrNull(row, 'source_ip'),
      headers: headers(row),
      payload: payload(row),
      request_method: textOrNull(row, 'request_method'),
      request_path: textOrNull(row, 'request_path'),
      request_query: textOrNull(row, 'request_query'),
      response_status: integerOrNull(row, 'response_status'),
      handshake: flagOrNull(row, 'handshake'),
    }),
  };
}
