import type { IncomingMessage } from 'node:http';

export type RawBodyResult =
  | { kind: 'ok'; body: Buffer }
  | { kind: 'too_large' }
  /** The client went away (or the stream failed) before the body was complete. */
  | { kind: 'aborted'; error: unknown };

/**
 * Reads the request body as the exact bytes received, stopping at `limit`.
 *
 * Listeners are used rather than `for await`: leaving an async iterator early destroys the
 * IncomingMessage, and destroying an unfinished request destroys the socket, so the 413 could
 * never be written. Here the stream is only paused; the caller answers (with Connection: close)
 * and Node discards or drops whatever the client is still sending.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<RawBodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: RawBodyResult): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        chunks.length = 0;
        finish({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    // Always copied: a chunk may be a view into a larger socket read buffer, which a queued event
    // would otherwise keep alive.
    const onEnd = (): void => finish({ kind: 'ok', body: Buffer.concat(chunks, size) });
    const onError = (error: unknown): void => finish({ kind: 'aborted', error });
    // 'close' before 'end' means the client went away mid-body ('aborted' is deprecated).
    const onClose = (): void =>
      finish({ kind: 'aborted', error: new Error('request closed before the body was complete') });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
    if (req.readableEnded) onEnd();
  });
}

/** The declared length, or undefined when absent (chunked) or not a plain decimal. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}
