/**
 * "The database cannot be reached right now" as opposed to "this statement was refused": the
 * first is worth a 503 and a retry, the second is a bug or bad input. The ingest group
 * commit, the queue sources, the API, MCP and the app's error handler all ask this one question.
 */
import { AppError } from './app-error.ts';

// SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, crash
// recovery), plus 53300 (too many connections).
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-4]|53300)$/;
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EPIPE',
]);
const UNAVAILABLE_NAMES = new Set(['ConnectionError', 'BackendTerminatedError', 'BackendTerminatedUnexpectedlyError']);
const UNAVAILABLE_MESSAGE = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /cannot use a pool after calling end/i,
  /client has encountered a connection error/i,
  /connection (?:is )?not (?:open|queryable)/i,
  /connect ECONNREFUSED/i,
];
// Errors wrap errors (slonik, pg-pool, AggregateError from dual-stack connects): look a few levels down.
const MAX_DEPTH = 5;

function causes(err: object): unknown[] {
  const { cause, errors, originalError } = err as { cause?: unknown; errors?: unknown; originalError?: unknown };
  const list: unknown[] = [];
  if (cause !== undefined) list.push(cause);
  if (originalError !== undefined) list.push(originalError);
  if (Array.isArray(errors)) list.push(...(errors as unknown[]));
  return list;
}

/**
 * True when err, or an error it wraps, says the database cannot be reached. An AppError never
 * counts: whoever threw it already chose what the caller sees, whatever its cause.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH || typeof err !== 'object' || err === null || err instanceof AppError) return false;
  const { code, name, message } = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true;
  if (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGE.some((re) => re.test(message))) return true;
  return causes(err).some((c) => isDatabaseUnavailable(c, depth + 1));
}
