import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.ts';
import {
  FOREIGN_CURSOR_MESSAGE,
  MALFORMED_CURSOR_MESSAGE,
  OLD_CURSOR_MESSAGE,
  decodeCursor,
  encodeCursor,
  queryFingerprint,
  type CursorPosition,
} from '../../src/store/events/cursor.ts';
import {
  MAX_MICROS,
  MIN_MICROS,
  microsFromRfc3339,
  parseTimestampInput,
  rfc3339FromMicros,
} from '../../src/store/sql/timestamps.ts';

const position = fc.record({
  receivedAtMicros: fc.bigInt({ min: MIN_MICROS, max: MAX_MICROS }),
  id: fc.uuid(),
});

/** The fingerprint most tests bind to: the default query. */
const query = queryFingerprint(['newest_first']);
const bound = (p: CursorPosition): string => encodeCursor({ ...p, fingerprint: query });

function refusal(text: string, fingerprint = query): unknown {
  try {
    decodeCursor(text, fingerprint);
  } catch (error) {
    return error;
  }
  return undefined;
}

function expectMalformed(text: string): void {
  const thrown = refusal(text);
  expect(thrown).toBeInstanceOf(AppError);
  expect(thrown).toMatchObject({ code: 'invalid_argument', message: MALFORMED_CURSOR_MESSAGE });
}

/** A cursor whose checksum is right but whose content is not a valid position. */
function forge(mutate: (bytes: Buffer) => void): string {
  const bytes = Buffer.from(bound({ receivedAtMicros: 0n, id: '01900000-0000-7000-8000-000000000000' }), 'base64url');
  mutate(bytes);
  createHash('sha256').update(bytes.subarray(0, 33)).digest().subarray(0, 4).copy(bytes, 33);
  return bytes.toString('base64url');
}

/** A version-1 cursor, as switchboard issued them before cursors were bound to their query. */
function versionOne(p: CursorPosition): string {
  const bytes = Buffer.alloc(29);
  bytes.writeUInt8(1, 0);
  bytes.writeBigInt64BE(p.receivedAtMicros, 1);
  Buffer.from(p.id.replaceAll('-', ''), 'hex').copy(bytes, 9);
  createHash('sha256').update(bytes.subarray(0, 25)).digest().subarray(0, 4).copy(bytes, 25);
  return bytes.toString('base64url');
}

describe('cursor', () => {
  it('round-trips every position exactly (microseconds included)', () => {
    fc.assert(
      fc.property(position, (p: CursorPosition) => {
        const text = bound(p);
        expect(text).toMatch(/^[A-Za-z0-9_-]{50}$/);
        expect(decodeCursor(text, query)).toEqual({ receivedAtMicros: p.receivedAtMicros, id: p.id.toLowerCase() });
      }),
    );
  });

  it('says what to do with a malformed cursor: pass next_cursor unchanged, or omit cursor', () => {
    expect(MALFORMED_CURSOR_MESSAGE).toContain('pass next_cursor from the previous page unchanged, or omit cursor');
    expectMalformed('not-a-cursor');
  });

  it('refuses an intact cursor made for another query (filters or order), saying so', () => {
    fc.assert(
      fc.property(position, fc.array(fc.string(), { maxLength: 4 }), (p, other) => {
        const foreign = queryFingerprint(['oldest_first', ...other]);
        fc.pre(!foreign.equals(query));
        expect(refusal(bound(p), foreign)).toMatchObject({
          code: 'invalid_argument',
          message: FOREIGN_CURSOR_MESSAGE,
        });
      }),
    );
    expect(FOREIGN_CURSOR_MESSAGE).toMatch(/belongs to another query/);
  });

  it('refuses a version-1 cursor (not bound to a query) with a message saying to start again', () => {
    fc.assert(
      fc.property(position, (p) => {
        expect(refusal(versionOne({ ...p, id: p.id.toLowerCase() }))).toMatchObject({
          code: 'invalid_argument',
          message: OLD_CURSOR_MESSAGE,
        });
      }),
    );
  });

  it('rejects any single changed character (tampering)', () => {
    fc.assert(
      fc.property(
        position,
        fc.nat(),
        fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
        (p, at, replacement) => {
          const text = bound(p);
          const index = at % text.length;
          fc.pre(text[index] !== replacement);
          expectMalformed(text.slice(0, index) + replacement + text.slice(index + 1));
        },
      ),
    );
  });

  it('rejects truncated and extended cursors', () => {
    fc.assert(
      fc.property(position, fc.nat(), (p, cut) => {
        const text = bound(p);
        expectMalformed(text.slice(0, cut % text.length));
        expectMalformed(`${text}A`);
        expectMalformed(`${text}=`);
      }),
    );
  });

  it('rejects well-formed base64url of the wrong shape', () => {
    expectMalformed(forge((bytes) => bytes.writeUInt8(3, 0)));
    expectMalformed(forge((bytes) => bytes.writeBigInt64BE(MAX_MICROS + 1n, 1)));
    expectMalformed(forge((bytes) => bytes.writeBigInt64BE(MIN_MICROS - 1n, 1)));
    expectMalformed(Buffer.alloc(37).toString('base64url'));
    expectMalformed(Buffer.alloc(29).toString('base64url'));
    expectMalformed(Buffer.from('{"received_at":"2024-01-01","id":"x"}').toString('base64url'));
  });

  it('rejects arbitrary strings and bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.uint8Array({ minLength: 0, maxLength: 64 }).map((b) => Buffer.from(b).toString('base64url')),
        ),
        (text) => {
          try {
            decodeCursor(text, query);
          } catch (error) {
            expect(error).toMatchObject({ code: 'invalid_argument' });
            return;
          }
          // Only a string that happens to be a genuine cursor may decode; re-encoding proves it.
          expect(bound(decodeCursor(text, query))).toBe(text);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

// The microsecond timestamps a cursor carries, and the ones callers pass as since/from/to.
const micros = (iso: string): bigint => BigInt(Date.parse(iso)) * 1000n;

describe('timestamps', () => {
  it('renders and reads canonical UTC with microseconds, across the whole range', () => {
    expect(rfc3339FromMicros(0n)).toBe('1970-01-01T00:00:00.000000Z');
    expect(rfc3339FromMicros(1_714_564_800_123_456n)).toBe('2024-05-01T12:00:00.123456Z');
    expect(rfc3339FromMicros(-1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(rfc3339FromMicros(MIN_MICROS)).toBe('0001-01-01T00:00:00.000000Z');
    expect(rfc3339FromMicros(MAX_MICROS)).toBe('9999-12-31T23:59:59.999999Z');
    fc.assert(
      fc.property(fc.bigInt({ min: MIN_MICROS, max: MAX_MICROS }), (value) => {
        expect(microsFromRfc3339(rfc3339FromMicros(value))).toBe(value);
      }),
    );
  });

  it('agrees with Date where Date is exact (milliseconds)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }), (ms) => {
        const text = rfc3339FromMicros(BigInt(ms) * 1000n);
        expect(text.replace(/(\.\d{3})\d{3}Z$/, '$1Z')).toBe(new Date(ms).toISOString());
      }),
    );
  });

  it('reads ISO-8601 input: offsets, date only, no offset as UTC, fractions', () => {
    expect(parseTimestampInput('2024-05-01T12:00:00Z', 'since', 'floor')).toBe(micros('2024-05-01T12:00:00Z'));
    expect(parseTimestampInput('2024-05-01T14:00:00+02:00', 'since', 'floor')).toBe(micros('2024-05-01T12:00:00Z'));
    expect(parseTimestampInput('2024-05-01T07:30-0430', 'since', 'floor')).toBe(micros('2024-05-01T12:00:00Z'));
    expect(parseTimestampInput('2024-05-01', 'since', 'floor')).toBe(micros('2024-05-01T00:00:00Z'));
    expect(parseTimestampInput('2024-05-01 12:00:00', 'since', 'floor')).toBe(micros('2024-05-01T12:00:00Z'));
    expect(parseTimestampInput('2024-05-01T12:00:00.5Z', 'since', 'floor')).toBe(
      micros('2024-05-01T12:00:00Z') + 500_000n,
    );
    expect(parseTimestampInput('2024-05-01T12:00:00.123456789Z', 'since', 'floor')).toBe(
      micros('2024-05-01T12:00:00Z') + 123_456n,
    );
    expect(parseTimestampInput('2024-05-01T12:00:00.123456789Z', 'from', 'ceil')).toBe(
      micros('2024-05-01T12:00:00Z') + 123_457n,
    );
    expect(parseTimestampInput('2024-02-29T00:00:00Z', 'since', 'floor')).toBe(micros('2024-02-29T00:00:00Z'));
  });

  it.each([
    'yesterday',
    '2024-13-01',
    '2023-02-29',
    '2024-04-31T00:00:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T12:60:00Z',
    '2024-05-01T12:00:60Z',
    '2024-05-01T12:00:00+24:00',
    '0000-01-01T00:00:00Z',
    '0001-01-01T00:00:00+01:00',
    '2024-05-01T12:00:00.1234567891Z',
    '12345-01-01',
    '',
    '1714564800',
  ])('rejects %j as invalid_argument', (text) => {
    expect(() => parseTimestampInput(text, 'since', 'floor')).toThrow(AppError);
    try {
      parseTimestampInput(text, 'since', 'floor');
    } catch (error) {
      expect(error).toMatchObject({ code: 'invalid_argument' });
    }
  });

  it('never throws anything but invalid_argument on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          parseTimestampInput(text, 'since', 'floor');
        } catch (error) {
          expect(error).toBeInstanceOf(AppError);
        }
      }),
    );
  });
});
