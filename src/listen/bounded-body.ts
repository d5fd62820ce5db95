/**
 * listen's memory is bounded whatever its server sends: every answer is read up to a limit and no
 * further (the connection is dropped at the limit), so a server that answers without end costs
 * listen at most the limit, not the whole answer. Each limit is well above what a switchboard
 * server sends there.
 */
import type { Dispatcher } from 'undici';
import { MAX_BODY_BYTES } from '../../generated/constants.ts';
import { InternalError } from '../errors/internal-error.ts';

const MiB = 1024 * 1024;

export const ANSWER_LIMITS = {
  /**
   * An event's exact bytes: no provider can be configured to accept a larger webhook body. (A
   * larger queue message is skipped, with this limit named.)
   */
  rawBytes: MAX_BODY_BYTES.maximum,
  /** A JSON answer: a page of 200 summaries, a replay-headers answer or the provider list is a few hundred KiB at most. */
  jsonBytes: 4 * MiB,
  /** The start of an error answer kept for its message; the rest is not read. */
  errorBytes: 64 * 1024,
  /** One stream message (a summary is a few KiB), in characters: eventsource-parser's maxBufferSize. */
  streamChars: MiB,
} as const;

/** "4 MiB", "64 KiB": how a limit is named in a message. */
export function describeLimit(bytes: number): string {
  return bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / 1024} KiB`;
}

/** An answer over its limit; `what` names the call. */
export class AnswerTooLargeError extends InternalError {
  readonly code = 'SB_ERR_ANSWER_TOO_LARGE';

  constructor(
    readonly what: string,
    readonly limit: number,
  ) {
    super(`${what}: the answer is over listen's limit of ${describeLimit(limit)}`);
  }
}

type Body = Dispatcher.ResponseData['body'];

/**
 * The body, up to `limit` bytes. With `truncate` a longer body is cut there (an error page's
 * start is enough); without, it is an AnswerTooLargeError. Either way nothing past the limit is
 * read: a declared Content-Length over it fails before the first byte.
 */
export async function readBounded(
  response: Dispatcher.ResponseData,
  limit: number,
  what: string,
  truncate = false,
): Promise<Buffer> {
  const body: Body = response.body;
  const declared = Number(response.headers['content-length']);
  if (!truncate && Number.isFinite(declared) && declared > limit) {
    body.destroy();
    throw new AnswerTooLargeError(what, limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > limit) {
      body.destroy();
      if (!truncate) throw new AnswerTooLargeError(what, limit);
      chunks.push(chunk.subarray(0, limit - size));
      size = limit;
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks, size);
}
