/**
 * An HTTP client for tests, on node:http rather than fetch: fetch will not send a Host, Origin or
 * Cookie of a test's choosing, nor a body without Content-Length on demand, and it decodes what
 * comes back. This returns the exact bytes.
 */
import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { LOOPBACK } from './local-server.ts';

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as received. */
  bytes: Buffer;
  /** The body as UTF-8 text. */
  body: string;
  json(): unknown;
}

export interface HttpRequestOptions {
  method?: string;
  path?: string;
  headers?: OutgoingHttpHeaders;
  /** Sent as is; with `chunked`, written in pieces without a Content-Length. */
  body?: Buffer | string | undefined;
  chunked?: boolean;
  /** Stop reading the response after this many ms (SSE streams never end on their own). */
  readForMs?: number;
  /** A connection of its own (and `Connection: close`), so requests cannot share one. */
  ownConnection?: boolean;
}

export function httpRequest(port: number, options: HttpRequestOptions = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: LOOPBACK,
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.ownConnection === true ? { connection: 'close', ...options.headers } : options.headers,
        ...(options.ownConnection === true ? { agent: false } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let timer: NodeJS.Timeout | undefined;
        const done = (): void => {
          if (timer !== undefined) clearTimeout(timer);
          const bytes = Buffer.concat(chunks);
          const body = bytes.toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            bytes,
            body,
            json: (): unknown => JSON.parse(body),
          });
        };
        if (options.readForMs !== undefined) {
          timer = setTimeout(() => {
            res.destroy();
            done();
          }, options.readForMs);
        }
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', done);
        res.on('error', () => done());
      },
    );
    // Once an answer arrived, a write that fails (the server closed after refusing) is not the test's concern.
    let answered = false;
    req.on('response', () => {
      answered = true;
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    if (body !== undefined && options.chunked === true) {
      const piece = 64 * 1024;
      let offset = 0;
      const writeMore = (): void => {
        while (offset < body.length) {
          const slice = body.subarray(offset, offset + piece);
          offset += piece;
          if (!req.write(slice)) {
            req.once('drain', writeMore);
            return;
          }
        }
        req.end();
      };
      writeMore();
    } else {
      // A declared length of the test's choosing is kept: that is how an oversized upload announces itself.
      if (body !== undefined && req.getHeader('content-length') === undefined)
        req.setHeader('content-length', body.length);
      req.end(body);
    }
  });
}

export interface RawStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  /** Resolves when the server ends the response: complete is true for a clean end (terminating chunk). */
  ended: Promise<{ complete: boolean; atMs: number }>;
  close(): void;
}

/** A GET that stays open (an SSE stream), read as it arrives until the server ends it. */
export function openStream(port: number, headers: OutgoingHttpHeaders, path: string): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: LOOPBACK, port, method: 'GET', path, headers: { connection: 'close', ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const ended = new Promise<{ complete: boolean; atMs: number }>((done) => {
          res.once('close', () => done({ complete: res.complete, atMs: performance.now() }));
        });
        res.on('error', () => undefined);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: () => Buffer.concat(chunks).toString('utf8'),
          ended,
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
