import type { Middleware } from 'koa';
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../errors/database-unavailable.ts';

/**
 * Answers 503 (with the error envelope and Retry-After) when the database is down, so clients
 * and the UI can tell "try again shortly" from a bug. Everything else goes on to the app's
 * error handler unchanged.
 */
export function databaseUnavailable(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err: unknown) {
      if (!isDatabaseUnavailable(err)) throw err;
      ctx.state.log.warn({ err, path: ctx.path }, 'database unavailable');
      ctx.status = 503;
      ctx.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
      ctx.body = { error: { code: 'internal', message: DATABASE_UNAVAILABLE_MESSAGE } };
    }
  };
}
