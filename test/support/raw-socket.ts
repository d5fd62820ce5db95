/**
 * HTTP over a bare TCP socket, for what Node's and undici's clients refuse to send or hide: header
 * bytes that are not UTF-8, duplicated or oversized headers, a head or body trickled a byte at a
 * time, a request left unfinished on purpose, an answer that arrives before the body is sent.
 */
import { connect, type Socket } from 'node:net';
import { LOOPBACK } from './local-server.ts';

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
function parseResponse(data: Buffer, ended: boolean): RawResponse | null {
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

export function openRaw(port: number, host = LOOPBACK): Promise<RawExchange> {
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
export async function sendRaw(port: number, bytes: Buffer | string, timeoutMs = 10_000): Promise<RawResponse | null> {
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

export interface TrickleOptions {
  /** Request line and headers, without the blank line. */
  head: string[];
  /** Called repeatedly until the response arrives; returns the next bytes to send, or null when done. */
  nextChunk: (sentSoFar: number) => Buffer | null;
  /** Pause between chunks, so the server can answer while the client is still sending. */
  intervalMs?: number;
  timeoutMs?: number;
}

/**
 * Sends the head, then the body a chunk at a time, and reports the answer with how much of the
 * body had been sent when it came: what an early answer (a 413 from the declared length, say) is.
 */
export async function trickle(
  port: number,
  options: TrickleOptions,
): Promise<RawResponse & { sentBeforeAnswer: number }> {
  const exchange = await openRaw(port);
  let sent = 0;
  let answeredAt: number | undefined;
  const answer = exchange.response.then((response) => {
    answeredAt = sent;
    return response;
  });
  const deadline = setTimeout(() => exchange.destroy(), options.timeoutMs ?? 10_000);
  let pumping = true;
  const pump = (): void => {
    if (!pumping || answeredAt !== undefined || exchange.socket.destroyed) return;
    const chunk = options.nextChunk(sent);
    if (chunk === null) {
      pumping = false;
      return;
    }
    sent += chunk.length;
    void exchange.write(chunk);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    void exchange.write(`${options.head.join('\r\n')}\r\n\r\n`);
    pump();
    timer = setInterval(pump, options.intervalMs ?? 20);
    const response = await answer;
    if (response === null) throw new Error('connection closed without a complete response');
    return { ...response, sentBeforeAnswer: answeredAt ?? sent };
  } finally {
    clearInterval(timer);
    clearTimeout(deadline);
    exchange.destroy();
  }
}

/** One chunk of a chunked transfer encoding. */
export function chunked(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
}

/** Writes `piece` every `everyMs` until the socket closes (slowloris); resolves with when it closed. */
export function dripUntilClosed(exchange: RawExchange, piece: string, everyMs: number): Promise<number> {
  const timer = setInterval(() => {
    if (!exchange.socket.destroyed) exchange.socket.write(piece);
  }, everyMs);
  return exchange.closed.then(() => {
    clearInterval(timer);
    return performance.now();
  });
}
