import type { Context, Middleware } from 'koa';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import { BIN_NAME } from '../shared/package-names.ts';
import type { Caller, TokenService } from './token-service.ts';

declare module 'koa' {
  interface DefaultState {
    /** Set by requireBearer once the request carried a valid token. */
    caller?: Caller;
    /** Set with caller: calls back once that token is revoked; returns the function that stops watching. */
    watchCaller?: (onRevoked: () => void) => () => void;
  }
}

export interface RequireBearerOptions {
  logger?: Logger;
  /** How the CLI runs where this server runs (`switchboard`, `npx @switchboard-dev/switchboard`); default `switchboard`. */
  cliCommand?: string | undefined;
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;
/** Longer than any token switchboard issues or anyone would configure; longer is not looked up. */
const MAX_TOKEN_LENGTH = 512;

const WWW_AUTHENTICATE = 'Bearer realm="switchboard"';

/**
 * What to do about a 401, in words: the error_description of its WWW-Authenticate and the end of
 * its message. Clients that know only OAuth print error_description; without it they go looking
 * for an authorization server switchboard does not have.
 */
function bearerHint(cliCommand = BIN_NAME): string {
  return `send Authorization: Bearer <token>; ${tokenCreateHint(cliCommand)}`;
}

/** What to do about a token that was sent but is not valid: the 401's message and error_description. */
function invalidTokenHint(cliCommand = BIN_NAME): string {
  return `the bearer token is not valid (unknown or revoked); ${tokenCreateHint(cliCommand)}`;
}

/**
 * Names the token command in the form that runs where the server runs: a bare `switchboard` only
 * exists with the package installed, and npx of the unscoped name would fetch someone else's package.
 */
export function tokenCreateHint(cliCommand = BIN_NAME): string {
  return `create one with ${cliCommand} token create`;
}

/** The presented bearer token, or undefined. Only the Authorization header counts: never a cookie or the query. */
export function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  const match = BEARER.exec(header);
  const token = match?.[1];
  return token !== undefined && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

/**
 * Refuses a request without a valid `Authorization: Bearer` token (unauthenticated: 401 with
 * WWW-Authenticate); otherwise sets ctx.state.caller and continues. Shared by /mcp, /api, /metrics.
 *
 * Cookies are never read: a browser attaches them to cross-site requests on its own, so a cookie
 * credential would make every state-changing call forgeable.
 */
export function requireBearer(tokens: TokenService, options: RequireBearerOptions = {}): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx);
    const caller = token === undefined ? null : await tokens.authenticate(token);
    if (caller === null) {
      options.logger?.info(
        { ip: ctx.ip, method: ctx.method, path: ctx.path, presented: token !== undefined },
        'request refused: no valid bearer token',
      );
      throw unauthenticated(token !== undefined, options.cliCommand);
    }
    ctx.state.caller = caller;
    ctx.state.watchCaller = (onRevoked) => tokens.watch(caller, onRevoked);
    await next();
  };
}

/** The caller requireBearer established; throws when the route is not behind it (a wiring bug). */
export function callerOf(ctx: Context): string {
  return callerFrom(ctx).name;
}

/** The whole caller, identity included, for what must belong to one token (sessions, streams). */
export function callerFrom(ctx: Context): Caller {
  const caller = ctx.state.caller;
  if (caller === undefined) throw new Error('callerFrom: the request did not pass requireBearer');
  return caller;
}

/**
 * For a connection that outlives its request (an SSE stream, an MCP session): onRevoked runs once
 * when the caller's token is revoked, so the connection can end. Returns the function that stops
 * watching, to call when the connection ends first.
 */
export function watchCaller(ctx: Context, onRevoked: () => void): () => void {
  const watch = ctx.state.watchCaller;
  if (watch === undefined) throw new Error('watchCaller: the request did not pass requireBearer');
  return watch(onRevoked);
}

/**
 * The 401 (RFC 6750 §3): no token sent gets the challenge and what to send, with no error code;
 * a token that is not valid adds error="invalid_token", and its error_description says so.
 */
function unauthenticated(presented: boolean, cliCommand: string | undefined): AppError {
  const invalid = invalidTokenHint(cliCommand);
  const hint = bearerHint(cliCommand);
  const challenge = presented
    ? `${WWW_AUTHENTICATE}, error="invalid_token", error_description="${invalid}"`
    : `${WWW_AUTHENTICATE}, error_description="${hint}"`;
  return new AppError('unauthenticated', presented ? invalid : `authentication required: ${hint}`, {
    headers: { 'WWW-Authenticate': challenge, 'Cache-Control': 'no-store' },
  });
}
