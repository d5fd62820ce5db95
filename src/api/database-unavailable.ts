import type { Middleware } from 'koa';
import { AppError } from '../errors/app-error.ts';

// SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, crash
// recovery), plus 53300 (too many connections): each means "the database is not there right now",
// not "this request is wrong".
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-4]|53300)$/;
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'EPIPE']);
const UNAVAILABLE_MESSAGE = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /cannot use a pool after calling end/i,
  /client has encountered a connection error/i,
  /connection (?:is )?not (?:open|queryable)/i,
];
// Errors wrap errors (slonik, pg-pool, AggregateError from dual-stack connects): look a few levels down.
const MAX_DEPTH = 5;

function causes(err: unknown): unknown[] {
  if (typeof err !== 'object' || err === null) return [];
  const list: unknown[] = [];
  const { cause, errors, originalError } = err as { cause?: unknown; errors?: unknown; originalError?: unknown };
  if (cause !== undefined) list.push(cause);
  if (originalError !== undefined) list.push(originalError);
  if (Array.isArray(errors)) list.push(...(errors as unknown[]));
  return list;
}

/** True when err (or what it wraps) says the database cannot be reached. */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || typeof err !== 'object' || err === null || err instanceof AppError) return false;
  const { code, name, message } = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true;
  if (name === 'ConnectionError' || name === 'BackendTerminatedError') return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGE.some((re) => re.test(message))) return true;
  return causes(err).some((c) => isDatabaseUnavailable(c, depth + 1));
}

export const DATABASE_RETRY_AFTER_SECONDS = 5;

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
      ctx.body = { error: { code: 'internal', message: 'database unavailable; try again shortly' } };
    }
  };
}
