import { randomUUID } from 'node:crypto';

/**
 * The one error registry: every failure a caller can see is one of these codes, serialised to
 * one envelope shape (schemas/error-envelope.schema.json) and, on HTTP, one status.
 */
export const ERROR_CODES = {
  not_found: { status: 404 },
  invalid_argument: { status: 400 },
  replay_failed: { status: 502 },
  rate_limited: { status: 429 },
  internal: { status: 500 },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const notFound = (message: string): AppError => new AppError('not_found', message);
export const invalidArgument = (message: string): AppError => new AppError('invalid_argument', message);

/**
 * Unexpected failures never reach a caller as-is (they may carry SQL or stack traces); the
 * caller gets a correlation id that matches the log line holding the detail.
 */
export function internalError(): { error: AppError; correlationId: string } {
  const correlationId = randomUUID();
  return {
    correlationId,
    error: new AppError('internal', `internal error; reference ${correlationId} in the server log`),
  };
}
