import { STATUS_CODES } from 'node:http';
import type { Context } from 'koa';
import type { ErrorCode } from '../../generated/constants.ts';
import { AppError, ERROR_REGISTRY, internalError, unavailable } from '../errors/app-error.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import { errorEnvelope } from '../errors/error-envelope.ts';
import type { Logger } from '../log/logger.ts';
import { lingerOnClose } from './lingering-close.ts';

/** The HTTP serialiser of the error registry: status, the headers the error carries, the envelope. */
export function sendError(ctx: Context, error: AppError): void {
  ctx.status = error.status;
  if (error.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(error.retryAfterSeconds));
  ctx.set(error.headers as Record<string, string>);
  // Closing before the client has sent its body: read and drop the rest for a while, so the
  // answer is not lost to a reset.
  if (error.headers['Connection'] === 'close') lingerOnClose(ctx.req);
  ctx.body = errorEnvelope(error, 'wire');
}

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  (Object.entries(ERROR_REGISTRY) as [ErrorCode, { status: number }][]).map(([code, { status }]) => [status, code]),
);

function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const status =
    (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : undefined;
}

/**
 * Whatever was thrown, as the registered error a caller may see. Koa's own client errors (a
 * malformed URI, say) keep their status and, when they are meant to be shown, their fixed message.
 * A database that cannot be reached is not a bug: it is `unavailable`, to retry. Anything else is
 * logged in full and answered `internal` with a reference to that log line.
 */
export function toAppError(err: unknown, log: Logger, context: Record<string, unknown>): AppError {
  if (err instanceof AppError) return err;
  const status = httpStatusOf(err);
  if (status !== undefined && status < 500) {
    const expose = (err as { expose?: unknown }).expose === true && err instanceof Error;
    const message = expose ? err.message : (STATUS_CODES[status] ?? 'bad request').toLowerCase();
    return new AppError(CODE_BY_STATUS.get(status) ?? 'invalid_argument', message);
  }
  if (isDatabaseUnavailable(err)) {
    log.warn({ err, ...context }, 'database unavailable');
    return unavailable();
  }
  const { error, correlationId } = internalError();
  log.error({ err, correlationId, ...context }, 'unhandled error');
  return error;
}
