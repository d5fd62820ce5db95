/**
 * The list cursor: the (received_at, id) of the last event on a page, which is the exclusive bound
 * of the next page, and a fingerprint of the query (filters and order) that made it. A cursor
 * sent with other filters or the other order would page through a different list from a point
 * chosen for this one, skipping or repeating events without anyone noticing; the fingerprint turns
 * that into invalid_argument.
 *
 * It carries no secret, because the position it encodes is nothing a caller could not ask for
 * with filters anyway; a checksum instead of an HMAC is therefore enough to turn tampering,
 * truncation and stray strings into invalid_argument rather than a wrong page or a 500, and
 * cursors stay valid across restarts and between instances of the same version.
 *
 * Layout (37 bytes, base64url without padding = 50 characters):
 *   [0]      version (2)
 *   [1..9)   received_at, signed big-endian microseconds since the Unix epoch
 *   [9..25)  event id, 16 bytes
 *   [25..33) query fingerprint (queryFingerprint)
 *   [33..37) first 4 bytes of sha-256 over bytes [0..33)
 *
 * Version 1 (29 bytes: no fingerprint) was not bound to its query; such a cursor is refused with
 * a message saying to start again.
 */
import { createHash } from 'node:crypto';
import { invalidArgument } from '../../errors/app-error.ts';
import { normalizeEventId } from '../../shared/event-id.ts';
import { MAX_MICROS, MIN_MICROS } from '../sql/timestamps.ts';

export interface CursorPosition {
  /** received_at in microseconds since the Unix epoch. */
  receivedAtMicros: bigint;
  /** Lower-case hyphenated UUID. */
  id: string;
}

export interface BoundCursor extends CursorPosition {
  /** queryFingerprint() of the query whose page ended here. */
  fingerprint: Buffer;
}

const VERSION = 2;
const FINGERPRINT_LENGTH = 8;
const BODY_LENGTH = 33;
const TOTAL_LENGTH = 37;
const ENCODED = /^[A-Za-z0-9_-]{50}$/;
const V1 = { version: 1, bodyLength: 25, encoded: /^[A-Za-z0-9_-]{39}$/ } as const;

/** @internal outside src/, only tests or benches use it */
export const MALFORMED_CURSOR_MESSAGE =
  'malformed cursor: pass next_cursor from the previous page unchanged, or omit cursor';
/** @internal outside src/, only tests or benches use it */
export const FOREIGN_CURSOR_MESSAGE =
  'the cursor belongs to another query: it was made with other filters or another order; send the same filters and order as the request that returned it, or omit cursor to start again';
/** @internal outside src/, only tests or benches use it */
export const OLD_CURSOR_MESSAGE =
  'the cursor comes from an earlier version of switchboard and is no longer accepted; omit cursor to start again from the first page';

const checksum = (body: Buffer): Buffer => createHash('sha256').update(body).digest().subarray(0, 4);

/**
 * The fingerprint of a query: the first bytes of the sha-256 of its canonical form. Callers pass
 * the normalized values (the same filter spelled two ways gives the same fingerprint).
 */
export function queryFingerprint(canonical: readonly unknown[]): Buffer {
  return createHash('sha256').update(JSON.stringify(canonical)).digest().subarray(0, FINGERPRINT_LENGTH);
}

export function encodeCursor(cursor: BoundCursor): string {
  const id = normalizeEventId(cursor.id);
  if (id === null) throw new TypeError('cursor id must be a UUID');
  if (cursor.receivedAtMicros < MIN_MICROS || cursor.receivedAtMicros > MAX_MICROS) {
    throw new RangeError('cursor timestamp out of range');
  }
  if (cursor.fingerprint.length !== FINGERPRINT_LENGTH) throw new RangeError('cursor fingerprint has the wrong length');
  const bytes = Buffer.alloc(TOTAL_LENGTH);
  bytes.writeUInt8(VERSION, 0);
  bytes.writeBigInt64BE(cursor.receivedAtMicros, 1);
  Buffer.from(id.replaceAll('-', ''), 'hex').copy(bytes, 9);
  cursor.fingerprint.copy(bytes, 25);
  checksum(bytes.subarray(0, BODY_LENGTH)).copy(bytes, BODY_LENGTH);
  return bytes.toString('base64url');
}

/** Whether text is an intact version-1 cursor (so the refusal can say why, not just "malformed"). */
function isVersionOne(text: string): boolean {
  if (!V1.encoded.test(text)) return false;
  const bytes = Buffer.from(text, 'base64url');
  return (
    bytes.toString('base64url') === text &&
    bytes.readUInt8(0) === V1.version &&
    checksum(bytes.subarray(0, V1.bodyLength)).equals(bytes.subarray(V1.bodyLength))
  );
}

/**
 * The position a cursor encodes, once it is shown to be intact and to belong to the query with
 * this fingerprint; invalid_argument saying what to do otherwise.
 */
export function decodeCursor(text: string, fingerprint: Buffer): CursorPosition {
  const malformed = invalidArgument(MALFORMED_CURSOR_MESSAGE);
  // Node's base64url decoder skips characters it does not know, so shape and canonical form are
  // checked explicitly instead of trusting whatever it decodes.
  if (!ENCODED.test(text)) throw isVersionOne(text) ? invalidArgument(OLD_CURSOR_MESSAGE) : malformed;
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.length !== TOTAL_LENGTH || bytes.toString('base64url') !== text) throw malformed;
  if (bytes.readUInt8(0) !== VERSION) throw malformed;
  if (!checksum(bytes.subarray(0, BODY_LENGTH)).equals(bytes.subarray(BODY_LENGTH))) throw malformed;
  const receivedAtMicros = bytes.readBigInt64BE(1);
  if (receivedAtMicros < MIN_MICROS || receivedAtMicros > MAX_MICROS) throw malformed;
  if (!bytes.subarray(25, BODY_LENGTH).equals(fingerprint)) throw invalidArgument(FOREIGN_CURSOR_MESSAGE);
  const hex = bytes.subarray(9, 25).toString('hex');
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { receivedAtMicros, id };
}
