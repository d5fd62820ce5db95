/**
 * The list cursor: the (received_at, id) of the last event on a page, which is the exclusive upper
 * bound of the next page. It carries no secret, because the position it encodes is nothing a
 * caller could not ask for with filters anyway; a checksum instead of an HMAC is therefore enough
 * to turn tampering, truncation and stray strings into invalid_argument rather than a wrong page
 * or a 500, and cursors stay valid across restarts and between instances.
 *
 * Layout (29 bytes, base64url without padding = 39 characters):
 *   [0]      version (1)
 *   [1..9)   received_at, signed big-endian microseconds since the Unix epoch
 *   [9..25)  event id, 16 bytes
 *   [25..29) first 4 bytes of sha-256 over bytes [0..25)
 */
import { createHash } from 'node:crypto';
import { invalidArgument } from '../errors/app-error.ts';
import { normalizeEventId } from './event-id.ts';
import { MAX_MICROS, MIN_MICROS } from './timestamps.ts';

export interface CursorPosition {
  /** received_at in microseconds since the Unix epoch. */
  receivedAtMicros: bigint;
  /** Lower-case hyphenated UUID. */
  id: string;
}

const VERSION = 1;
const BODY_LENGTH = 25;
const TOTAL_LENGTH = 29;
const ENCODED = /^[A-Za-z0-9_-]{39}$/;

const checksum = (body: Buffer): Buffer => createHash('sha256').update(body).digest().subarray(0, 4);

export function encodeCursor(position: CursorPosition): string {
  const id = normalizeEventId(position.id);
  if (id === null) throw new TypeError('cursor id must be a UUID');
  if (position.receivedAtMicros < MIN_MICROS || position.receivedAtMicros > MAX_MICROS) {
    throw new RangeError('cursor timestamp out of range');
  }
  const bytes = Buffer.alloc(TOTAL_LENGTH);
  bytes.writeUInt8(VERSION, 0);
  bytes.writeBigInt64BE(position.receivedAtMicros, 1);
  Buffer.from(id.replaceAll('-', ''), 'hex').copy(bytes, 9);
  checksum(bytes.subarray(0, BODY_LENGTH)).copy(bytes, BODY_LENGTH);
  return bytes.toString('base64url');
}

export function decodeCursor(text: string): CursorPosition {
  const malformed = invalidArgument('malformed cursor');
  // Node's base64url decoder skips characters it does not know, so shape and canonical form are
  // checked explicitly instead of trusting whatever it decodes.
  if (!ENCODED.test(text)) throw malformed;
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.length !== TOTAL_LENGTH || bytes.toString('base64url') !== text) throw malformed;
  if (bytes.readUInt8(0) !== VERSION) throw malformed;
  if (!checksum(bytes.subarray(0, BODY_LENGTH)).equals(bytes.subarray(BODY_LENGTH))) throw malformed;
  const receivedAtMicros = bytes.readBigInt64BE(1);
  if (receivedAtMicros < MIN_MICROS || receivedAtMicros > MAX_MICROS) throw malformed;
  const hex = bytes.subarray(9, BODY_LENGTH).toString('hex');
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { receivedAtMicros, id };
}
