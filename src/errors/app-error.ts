import { randomUUID } from 'node:crypto';
import {
  RETRY_AFTER_LIMITS,
  type ErrorCode,
  type ReplayErrorCode,
  type ReplayErrorReason,
} from '../../generated/constants.ts';

interface ErrorDefinition {
  /** The HTTP status the code always travels with. */
  readonly status: number;
  /**
   * The code an MCP tool result carries: tools speak only SPEC-0005's five codes, so a refusal
   * that exists only on HTTP maps to the nearest of them.
   */
  readonly toolCode: ReplayErrorCode;
  /** The message when the thrower has nothing more specific to say; `{name}` is filled from params. */
  readonly message: string;
}

/**
 * The one error registry: every failure a caller can see is one of these codes (the error
 * envelope's enum, schemas/error-envelope.schema.json), with one HTTP status and one message
 * template. Each transport has one serialiser for them: http/error-response.ts and
 * mcp/tool-results.ts.
 */
const entry = <T extends ReplayErrorCode>(status: number, toolCode: T, message: string) =>
  ({ status, toolCode, message }) as const;

export const ERROR_REGISTRY = {
  invalid_argument: entry(400, 'invalid_argument', 'bad request'),
  unauthenticated: entry(401, 'invalid_argument', 'authentication required: send Authorization: Bearer <token>'),
  forbidden: entry(403, 'invalid_argument', 'forbidden'),
  not_found: entry(404, 'not_found', 'not found'),
  method_not_allowed: entry(405, 'invalid_argument', 'method {method} not allowed on {path}'),
  conflict: entry(409, 'invalid_argument', 'conflict'),
  payload_too_large: entry(413, 'invalid_argument', 'request body too large; the limit is {limit} bytes'),
  rate_limited: entry(429, 'rate_limited', 'rate limit reached; retry after {seconds} s'),
  internal: entry(500, 'internal', 'internal error; reference {reference} in the server log'),
  replay_failed: entry(502, 'replay_failed', 'replay failed'),
  unavailable: entry(503, 'internal', 'database unavailable; try again shortly'),
} satisfies Record<ErrorCode, ErrorDefinition>;

export type ErrorParams = Readonly<Record<string, string | number>>;

export interface AppErrorOptions {
  /** Seconds to wait before retrying: Retry-After on HTTP, retry_after in a rate_limited envelope. */
  retryAfterSeconds?: number;
  /** Response headers that belong to this refusal (WWW-Authenticate, Allow, Connection: close). */
  headers?: Readonly<Record<string, string>>;
  cause?: unknown;
  /**
   * Replay failures: why, in the terms the replay history shows (could_not_connect, no_answer…),
   * where the code alone (replay_failed) does not say it.
   */
  reason?: ReplayErrorReason;
}

/** `{name}` placeholders of a template, filled from params; one left unfilled stays visible. */
export function fillTemplate(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(params, name) ? String(params[name]) : whole,
  );
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly retryAfterSeconds: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly reason: ReplayErrorReason | undefined;

  /** A registered code with its own message, or the registry's template filled from params. */
  constructor(code: ErrorCode, message: string | ErrorParams = {}, options: AppErrorOptions = {}) {
    super(
      typeof message === 'string' ? message : fillTemplate(ERROR_REGISTRY[code].message, message),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'AppError';
    this.code = code;
    // The contract's cap on any wait (a slow refill rate could ask for hours): clients wait no longer.
    this.retryAfterSeconds =
      options.retryAfterSeconds === undefined
        ? undefined
        : Math.min(options.retryAfterSeconds, RETRY_AFTER_LIMITS.maximum);
    this.headers = options.headers ?? {};
    this.reason = options.reason;
  }

  get status(): number {
    return ERROR_REGISTRY[this.code].status;
  }

  /** The code as an MCP tool result says it. */
  get toolCode(): ReplayErrorCode {
    return ERROR_REGISTRY[this.code].toolCode;
  }
}

export const notFound = (message: string): AppError => new AppError('not_found', message);
export const invalidArgument = (message: string): AppError => new AppError('invalid_argument', message);

export const methodNotAllowed = (method: string, path: string, allow: readonly string[]): AppError =>
  new AppError('method_not_allowed', { method, path }, { headers: { Allow: allow.join(', ') } });

/**
 * The body is over `limitBytes`. `closeConnection` when the rest of it will not be read: the
 * socket then cannot carry another request.
 */
export const payloadTooLarge = (limitBytes: number, options: { closeConnection?: boolean } = {}): AppError =>
  new AppError(
    'payload_too_large',
    { limit: limitBytes },
    options.closeConnection === true ? { headers: { Connection: 'close' } } : {},
  );

/** Seconds a client is told to wait (Retry-After) when the database is down. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The database cannot be reached: retry later. `message` when a reference or more detail helps. */
export const unavailable = (message?: string, cause?: unknown): AppError =>
  new AppError('unavailable', message ?? {}, { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS, cause });

/**
 * Unexpected failures never reach a caller as-is (they may carry SQL or stack traces); the
 * caller gets a correlation id that matches the log line holding the detail.
 */
export function internalError(): { error: AppError; correlationId: string } {
  const correlationId = randomUUID();
  return { correlationId, error: new AppError('internal', { reference: correlationId }) };
}
