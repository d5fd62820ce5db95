import type { Middleware } from 'koa';
import { AppError, internalError } from '../errors/app-error.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DATABASE_UNAVAILABLE_MESSAGE,
  isDatabaseUnavailable,
} from '../errors/database-unavailable.ts';
import type { Logger } from '../log/logger.ts';

export interface ErrorBody {
  error: { code: string; message: string; retry_after?: number };
}

export function errorBody(error: AppError): ErrorBody {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.retryAfterSeconds === undefined ? {} : { retry_after: error.retryAfterSeconds }),
    },
  };
}

/**
 * Serialises every failure to the one error envelope; unexpected ones are logged and hidden. A
 * database outage is not a bug: whichever route ran into it (a token lookup on /metrics, say),
 * the answer is 503 with Retry-After, as on the routes that handle it themselves.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err: unknown) {
      if (err instanceof AppError) {
        ctx.status = err.status;
        if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(err.retryAfterSeconds));
        ctx.body = errorBody(err);
        return;
      }
      const status = httpStatusOf(err);
      if (status !== undefined && status < 500) {
        // Koa's own client errors (bad JSON, too large) carry safe, fixed messages.
        ctx.status = status;
        ctx.body = { error: { code: 'invalid_argument', message: clientMessage(status, err) } };
        return;
      }
      if (isDatabaseUnavailable(err)) {
        logger.warn({ err, path: ctx.path, method: ctx.method }, 'database unavailable');
        ctx.status = 503;
        ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
        ctx.body = { error: { code: 'internal', message: DATABASE_UNAVAILABLE_MESSAGE } };
        return;
      }
      const { error, correlationId } = internalError();
      logger.error({ err, correlationId, path: ctx.path, method: ctx.method }, 'unhandled error');
      ctx.status = 500;
      ctx.body = errorBody(error);
    }
  };
}

function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const status =
    (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : undefined;
}

function clientMessage(status: number, err: unknown): string {
  if (status === 413) return 'request body too large';
  const expose = typeof err === 'object' && err !== null && (err as { expose?: unknown }).expose === true;
  return expose && err instanceof Error ? err.message : 'bad request';
}
