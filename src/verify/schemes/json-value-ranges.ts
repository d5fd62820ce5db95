/**
 * Where a value sits in a JSON body, as byte offsets, so that one value can be blanked (or put
 * back) while every other byte of the delivery stays exactly as it was received. Re-serialising
 * the parsed JSON would change spacing, key order and number spelling, and the stored body is
 * promised to be the delivery's own bytes. The scanner walks the bytes, not a decoded string:
 * multi-byte UTF-8 never contains an ASCII byte, so quotes, brackets and escapes are found as
 * they are, and an offset found here is an offset into the buffer.
 */

export interface ByteRange {
  start: number;
  end: number;
}

/** RFC 6901: `/a/b~1c` is the key `a`, then the key `b/c`. */
function pointerSegments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

class NotJson extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * A recursive descent over the bytes that records the range of every value whose path is the
 * pointer's. It is only asked about bodies JSON.parse accepted, so it checks no more than it needs
 * to find its way; anything it cannot read is NotJson, and the caller treats that as "not found".
 */
class Scanner {
  private i = 0;
  readonly found: ByteRange[] = [];
  /** The first key an object repeats, at any depth, or null. */
  duplicate: string | null = null;

  constructor(
    private readonly b: Buffer,
    private readonly path: readonly string[],
  ) {}

  run(): void {
    this.ws();
    this.value(0);
    this.ws();
    if (this.i !== this.b.length) throw new NotJson();
  }

  private ws(): void {
    for (;;) {
      const c = this.b[this.i];
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.i++;
    }
  }

  private expect(byte: number): void {
    if (this.b[this.i] !== byte) throw new NotJson();
    this.i++;
  }

  /** `depth`: how many of the pointer's segments this value's path matched, or -1 once it left the pointer. */
  private value(depth: number): void {
    const start = this.i;
    const c = this.b[this.i];
    if (c === 0x7b) this.object(depth);
    else if (c === 0x5b) this.array(depth);
    else if (c === QUOTE) this.string();
    else if (c === undefined) throw new NotJson();
    else this.scalar();
    if (depth === this.path.length) this.found.push({ start, end: this.i });
  }

  private child(depth: number, key: string): number {
    return depth >= 0 && depth < this.path.length && this.path[depth] === key ? depth + 1 : -1;
  }

  /** The members of an object or the elements of an array, each read by `item`, up to `close`. */
  private items(close: number, item: (index: number) => void): void {
    this.i++;
    this.ws();
    if (this.b[this.i] === close) {
      this.i++;
      return;
    }
    for (let index = 0; ; index++) {
      this.ws();
      item(index);
      this.ws();
      if (this.b[this.i] !== 0x2c) break;
      this.i++;
    }
    this.expect(close);
  }

  private object(depth: number): void {
    const keys = new Set<string>();
    this.items(0x7d, () => {
      const keyStart = this.i;
      this.string();
      const key: unknown = JSON.parse(this.b.subarray(keyStart, this.i).toString('utf8'));
      if (keys.has(String(key))) this.duplicate ??= String(key);
      keys.add(String(key));
      this.ws();
      this.expect(0x3a);
      this.ws();
      this.value(this.child(depth, String(key)));
    });
  }

  private array(depth: number): void {
    this.items(0x5d, (index) => this.value(this.child(depth, String(index))));
  }

  private string(): void {
    this.expect(QUOTE);
    for (;;) {
      const c = this.b[this.i];
      if (c === undefined || c < 0x20) throw new NotJson();
      this.i += c === BACKSLASH ? 2 : 1;
      if (c === QUOTE) return;
    }
  }

  /** A number, true, false or null: the run of bytes up to the next structural byte or space. */
  private scalar(): void {
    const start = this.i;
    while (this.i < this.b.length && /[-+.0-9a-zA-Z]/.test(String.fromCharCode(this.b[this.i] ?? 0))) this.i++;
    if (this.i === start) throw new NotJson();
  }
}

/**
 * The byte range of every value at the pointer (a JSON object may repeat a key; JSON.parse keeps
 * the last, so the last range is the one a consumer reads), or null when the body is not JSON.
 */
export function jsonValueRanges(body: Buffer, pointer: string): ByteRange[] | null {
  try {
    JSON.parse(body.toString('utf8'));
    const scanner = new Scanner(body, pointerSegments(pointer));
    scanner.run();
    return scanner.found;
  } catch {
    // Not JSON, or nested deeper than the stack: either way there is no value to point at.
    return null;
  }
}

/** The body with each range replaced by `replacement`, every other byte as it was. */
export function replaceRanges(body: Buffer, ranges: readonly ByteRange[], replacement: Buffer): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const { start, end } of ranges) {
    parts.push(body.subarray(last, start), replacement);
    last = end;
  }
  parts.push(body.subarray(last));
  return Buffer.concat(parts);
}

/**
 * The first key some object of a JSON body repeats, at any depth, or null (also when the body is
 * not JSON). JSON.parse keeps the last copy, a first-wins parser the first: a body whose signature
 * or signed fields are read from it must not mean two things.
 */
export function duplicateJsonKey(body: Buffer): string | null {
  try {
    JSON.parse(body.toString('utf8'));
    const scanner = new Scanner(body, []);
    scanner.run();
    return scanner.duplicate;
  } catch {
    return null;
  }
}
