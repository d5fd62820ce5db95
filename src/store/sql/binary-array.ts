/**
 * One-dimensional arrays in PostgreSQL's binary wire format (what array_recv reads), sent as a
 * binary parameter and cast to their type in the statement (`$n::text[]`).
 *
 * The insert of every group commit sends each column as an array. In text form each element is
 * quoted and escaped on the way out (pg's arrayString, a regex per element, and a jsonb header
 * object is mostly quotes) and parsed again by array_in on the way in; a bytea element is spelt as
 * two hex digits per byte besides, so a batch of 2 KiB webhooks would cost four times its size.
 * In binary form each element is its own bytes behind a length, built in one buffer.
 *
 * Elements are written as given: text goes through storable() before it gets here, as PostgreSQL
 * checks text for NUL and invalid UTF-8 in either form.
 */
const HEADER_BYTES = 20;
const NULL_LENGTH = -1;
/** jsonb's binary form is a version byte (1) followed by the JSON text. */
const JSONB_VERSION = 1;

/** Element types by their pg_type oid and binary encoding. */
const ELEMENT = {
  bytea: { oid: 17 },
  text: { oid: 25 },
  jsonb: { oid: 3802 },
  uuid: { oid: 2950 },
  bool: { oid: 16 },
  int2: { oid: 21 },
  int4: { oid: 23 },
} as const;

export type BinaryElementType = keyof typeof ELEMENT;
type ElementValue<T extends BinaryElementType> = T extends 'bytea'
  ? Buffer
  : T extends 'bool'
    ? boolean
    : T extends 'int2' | 'int4'
      ? number
      : string;

function elementSize(type: BinaryElementType, value: Buffer | string | number | boolean): number {
  switch (type) {
    case 'bytea':
      return (value as Buffer).length;
    case 'text':
      return Buffer.byteLength(value as string, 'utf8');
    case 'jsonb':
      return 1 + Buffer.byteLength(value as string, 'utf8');
    case 'uuid':
      return 16;
    case 'bool':
      return 1;
    case 'int2':
      return 2;
    case 'int4':
      return 4;
  }
}

function writeElement(
  out: Buffer,
  offset: number,
  type: BinaryElementType,
  value: Buffer | string | number | boolean,
  size: number,
): void {
  switch (type) {
    case 'bytea':
      (value as Buffer).copy(out, offset);
      return;
    case 'text':
      out.write(value as string, offset, size, 'utf8');
      return;
    case 'jsonb':
      out[offset] = JSONB_VERSION;
      out.write(value as string, offset + 1, size - 1, 'utf8');
      return;
    case 'uuid': {
      // The canonical 8-4-4-4-12 spelling; anything else fails here rather than in the database.
      const hex = (value as string).replaceAll('-', '');
      if (hex.length !== 32 || out.write(hex, offset, 16, 'hex') !== 16)
        throw new Error(`not a uuid: ${String(value)}`);
      return;
    }
    case 'bool':
      out[offset] = value ? 1 : 0;
      return;
    case 'int2':
      out.writeInt16BE(value as number, offset);
      return;
    case 'int4':
      out.writeInt32BE(value as number, offset);
      return;
  }
}

/** The array of `items` (null for SQL NULL) as array_recv reads it, elements of `type`. */
export function encodeBinaryArray<T extends BinaryElementType>(
  type: T,
  items: ReadonlyArray<ElementValue<T> | null>,
): Buffer {
  const sizes = new Int32Array(items.length);
  let size = HEADER_BYTES;
  let nulls = 0;
  items.forEach((item, index) => {
    const bytes = item === null ? NULL_LENGTH : elementSize(type, item);
    sizes[index] = bytes;
    if (bytes === NULL_LENGTH) nulls = 1;
    size += 4 + Math.max(0, bytes);
  });
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(1, 0); // dimensions
  out.writeInt32BE(nulls, 4); // whether any element is NULL
  out.writeUInt32BE(ELEMENT[type].oid, 8);
  out.writeInt32BE(items.length, 12);
  out.writeInt32BE(1, 16); // lower bound, as PostgreSQL arrays start at 1
  let offset = HEADER_BYTES;
  items.forEach((item, index) => {
    const bytes = sizes[index] ?? NULL_LENGTH;
    out.writeInt32BE(bytes, offset);
    offset += 4;
    if (item === null || bytes === NULL_LENGTH) return;
    writeElement(out, offset, type, item, bytes);
    offset += bytes;
  });
  return out;
}
