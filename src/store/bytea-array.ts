/**
 * A bytea[] in PostgreSQL's binary wire format (what array_recv reads). Sent as a binary parameter,
 * payloads travel as their own bytes; the text form of a bytea array spells each byte as two hex
 * digits plus escaping, so a batch of 2 KiB webhooks would cost four times its size to build,
 * send and parse.
 */
const BYTEA_OID = 17;
const HEADER_BYTES = 20;

export function encodeByteaArray(items: readonly Buffer[]): Buffer {
  let size = HEADER_BYTES;
  for (const item of items) size += 4 + item.length;
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(1, 0); // dimensions
  out.writeInt32BE(0, 4); // no NULL elements
  out.writeUInt32BE(BYTEA_OID, 8);
  out.writeInt32BE(items.length, 12);
  out.writeInt32BE(1, 16); // lower bound, as PostgreSQL arrays start at 1
  let offset = HEADER_BYTES;
  for (const item of items) {
    out.writeInt32BE(item.length, offset);
    item.copy(out, offset + 4);
    offset += 4 + item.length;
  }
  return out;
}
