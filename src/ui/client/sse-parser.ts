/**
 * A Server-Sent Events parser for fetch() streams. EventSource cannot send an Authorization
 * header, and the API takes bearer tokens only, so the UI reads the stream itself. Follows the
 * WHATWG "event stream interpretation" rules: any of CRLF, LF or CR ends a line, one space after
 * the colon is dropped, an id with NUL is ignored, and a blank line dispatches.
 */
export interface SseMessage {
  event: string;
  data: string;
  /** The last event id in force when this message was dispatched ('' when none). */
  id: string;
}

export interface SseParseResult {
  messages: SseMessage[];
  /** Comment lines seen (heartbeats); any of them proves the connection is alive. */
  comments: number;
  /** The server's reconnection delay, when it sent one. */
  retryMs: number | undefined;
}

export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private hasData = false;
  private lastId = '';
  // A chunk ending in CR may be half of a CRLF: its LF must not end a second, empty line.
  private skipLeadingLf = false;

  get lastEventId(): string {
    return this.lastId;
  }

  push(chunk: string): SseParseResult {
    const result: SseParseResult = { messages: [], comments: 0, retryMs: undefined };
    let text = this.buffer + chunk;
    if (this.skipLeadingLf && text.startsWith('\n')) text = text.slice(1);
    this.skipLeadingLf = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(text.slice(start, i), result);
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLeadingLf = true;
        }
      }
      start = i + 1;
    }
    this.buffer = text.slice(start);
    return result;
  }

  private line(line: string, result: SseParseResult): void {
    if (line === '') {
      if (this.hasData)
        result.messages.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.lastId });
      this.event = '';
      this.data = [];
      this.hasData = false;
      return;
    }
    if (line.startsWith(':')) {
      result.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) result.retryMs = Number(value);
        break;
      default:
        break;
    }
  }
}
