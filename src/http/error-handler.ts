import type { Middleware } from 'koa';
import type { Logger } from '../log/logger.ts';
import { sendError, toAppError } from './error-response.ts';

/**
 * Every failure a route throws becomes the one error envelope, with its registered status. A
 * database outage is not a bug: whichever route ran into it (a token lookup on /metrics, say), the
 * answer is 503 unavailable with Retry-After, as on the routes that handle it themselves.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err: unknown) {
      sendError(ctx, toAppError(err, logger, { path: ctx.path, method: ctx.method }));
    }
  };
}
