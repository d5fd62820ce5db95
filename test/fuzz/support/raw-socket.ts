/**
 * HTTP over a bare TCP socket, for what Node's and undici's clients refuse to send: header bytes
 * that are not UTF-8, duplicated or oversized headers, a head or body trickled a byte at a time,
 * a request left unfinished on purpose.
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  socket: Socket;
  write(bytes: Buffer | string): Promise<void>;
  /** The first response on the socket, or null when the server closed it without answering. */
  response: Promise<RawResponse | null>;
  /** Resolves when the socket is closed (by either side), with whether it was an error (reset). */
  closed: Promise<{ hadError: boolean }>;
  destroy(): void;
}

/** Parses one HTTP/1.1 response out of a buffer; null when it is not complete yet. */
export function parseResponse(data: Buffer, ended: boolean): RawResponse | null {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const head = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const rest = data.subarray(headEnd + 4);
  const length = headers['content-length'];
  if (length !== undefined) {
    const n = Number(length);
    return rest.length >= n
      ? { status, headers, body: rest.subarray(0, n) }
      : ended
        ? { status, headers, body: rest }
        : null;
  }
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const chunks: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', offset);
      if (lineEnd < 0) return ended ? { status, headers, body: Buffer.concat(chunks) } : null;
      const size = parseInt(rest.subarray(offset, lineEnd).toString('latin1'), 16);
      if (Number.isNaN(size)) return { status, headers, body: Buffer.concat(chunks) };
      if (size === 0) return { status, headers, body: Buffer.concat(chunks) };
      if (rest.length < lineEnd + 2 + size + 2) return ended ? { status, headers, body: Buffer.concat(chunks) } : null;
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      offset = lineEnd + 2 + size + 2;
    }
  }
  // No length and not chunked: the body runs to the end of the connection (or is empty for 1xx/204/304).
  if (status === 204 || status === 304 || (status >= 100 && status < 200))
    return { status, headers, body: Buffer.alloc(0) };
  return ended ? { status, headers, body: rest } : null;
}

export function openRaw(port: number, host = '127.0.0.1'): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let data = Buffer.alloc(0);
    let settle: (r: RawResponse | null) => void = () => undefined;
    let settled = false;
    const response = new Promise<RawResponse | null>((r) => {
      settle = (value) => {
        if (settled) return;
        settled = true;
        r(value);
      };
    });
    const closed = new Promise<{ hadError: boolean }>((r) => socket.once('close', (hadError) => r({ hadError })));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const parsed = parseResponse(data, false);
      if (parsed !== null) settle(parsed);
    });
    socket.on('end', () => settle(parseResponse(data, true)));
    socket.on('close', () => settle(parseResponse(data, true)));
    socket.on('error', () => undefined);
    socket.once('connect', () =>
      resolve({
        socket,
        write: (bytes) =>
          new Promise<void>((done) => {
            if (socket.destroyed) return done();
            socket.write(bytes, () => done());
          }),
        response,
        closed,
        destroy: () => socket.destroy(),
      }),
    );
    socket.once('error', reject);
  });
}

/** Sends the bytes at once and waits for the answer (or the server closing the socket), bounded. */
export async function rawRequest(
  port: number,
  bytes: Buffer | string,
  timeoutMs = 10_000,
): Promise<RawResponse | null> {
  const exchange = await openRaw(port);
  const timer = setTimeout(() => exchange.destroy(), timeoutMs);
  try {
    await exchange.write(bytes);
    return await exchange.response;
  } finally {
    clearTimeout(timer);
    exchange.destroy();
  }
}
