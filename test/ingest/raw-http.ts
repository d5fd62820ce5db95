/** HTTP at the socket level, for what fetch hides: early answers, chunking, repeated headers. */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Body bytes the client had written when the response arrived. */
  sentBeforeAnswer: number;
}

export interface RawRequestOptions {
  port: number;
  /** Request line and headers, without the blank line. */
  head: string[];
  /** Called repeatedly until the response arrives; returns the next bytes to send, or null when done. */
  nextChunk: (sentSoFar: number) => Buffer | null;
  /** Pause between chunks, so the server can answer while the client is still sending. */
  intervalMs?: number;
  timeoutMs?: number;
}

function parseResponse(data: Buffer): { status: number; headers: Record<string, string>; body: string } | null {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = text.slice(end + 4);
  const length = Number(headers['content-length'] ?? NaN);
  if (Number.isFinite(length) && Buffer.byteLength(body, 'latin1') < length) return null;
  return { status: Number(statusLine?.split(' ')[1]), headers, body };
}

export function rawRequest(options: RawRequestOptions): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(options.port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let sent = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (error: Error | null, response?: RawResponse): void => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearInterval(timer);
      clearTimeout(deadline);
      socket.destroy();
      if (error !== null) reject(error);
      else if (response !== undefined) resolve(response);
    };
    const deadline = setTimeout(() => finish(new Error('no response in time')), options.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parseResponse(received);
      if (parsed !== null) finish(null, { ...parsed, sentBeforeAnswer: sent });
    });
    // The server may close while we are still writing; what matters is the response it sent first.
    socket.on('error', (err) => {
      const parsed = parseResponse(received);
      if (parsed !== null) finish(null, { ...parsed, sentBeforeAnswer: sent });
      else finish(err);
    });
    socket.on('close', () => {
      const parsed = parseResponse(received);
      if (parsed !== null) finish(null, { ...parsed, sentBeforeAnswer: sent });
      else finish(new Error(`connection closed without a complete response: ${received.toString('latin1')}`));
    });
    socket.on('connect', () => {
      socket.write(`${options.head.join('\r\n')}\r\n\r\n`);
      const pump = (): void => {
        if (done || socket.destroyed) return;
        const chunk = options.nextChunk(sent);
        if (chunk === null) {
          if (timer !== undefined) clearInterval(timer);
          return;
        }
        sent += chunk.length;
        socket.write(chunk);
      };
      pump();
      timer = setInterval(pump, options.intervalMs ?? 20);
    });
  });
}

/** One chunk of a chunked transfer encoding. */
export function chunked(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
}
