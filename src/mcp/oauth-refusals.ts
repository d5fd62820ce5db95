/**
 * Answers for the OAuth endpoints clients look for after a 401. switchboard takes static bearer
 * tokens and runs no authorization server, but MCP clients (Claude Code, mcp-remote, the MCP
 * Inspector, all on the official SDK) meet a 401 by falling back to the MCP authorization spec's
 * default endpoints at the server's origin and registering themselves there (RFC 7591). A 404 in
 * switchboard's envelope is not an OAuth error response, so they report a parse failure or a bare
 * "registration rejected"; an OAuth error response (RFC 7591 §3.2.2, RFC 6749 §5.2) is printed as
 * it stands, and its error_description says what to send instead.
 *
 * Some clients (mcp-remote) send the bearer token they were given with these requests too, so the
 * refusal can say whether that token is the problem: otherwise a client that did send a token,
 * only a revoked one, would print "send Authorization: Bearer <token>" and leave its user puzzled.
 *
 * Serving protected-resource metadata (RFC 9728) with no authorization servers was tried and
 * changes nothing: the SDK then falls back to the same endpoints (docs/mcp.md, Troubleshooting).
 */
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { bearerToken, tokenCreateHint } from '../auth/require-bearer.ts';
import { AppError } from '../errors/app-error.ts';
import { MCP_SECURITY_HEADERS } from './http-responses.ts';

/** Registration, authorization and token endpoints, where the SDK's fallback puts them. */
const OAUTH_FALLBACK_PATHS: ReadonlySet<string> = new Set(['/register', '/authorize', '/token']);

type PresentedToken = 'none' | 'invalid' | 'valid';

/** What each refusal says, by the bearer token the request carried; cliCommand as in requireBearer. */
function oauthRefusalBodies(
  cliCommand?: string,
): Readonly<Record<PresentedToken, { error: string; error_description: string }>> {
  return {
    // Clients that do not forward their token here (the Inspector) may still have sent one with the
    // MCP request, so this one cannot tell a missing token from a wrong one, and says both.
    none: {
      error: 'invalid_request',
      error_description: `switchboard does not use OAuth: send Authorization: Bearer <token> with a token it knows (if you sent one, it is unknown or revoked); ${tokenCreateHint(cliCommand)}`,
    },
    invalid: {
      error: 'invalid_request',
      error_description: `switchboard does not use OAuth, and the bearer token sent is not valid (unknown or revoked); ${tokenCreateHint(cliCommand)}`,
    },
    valid: {
      error: 'invalid_request',
      error_description:
        'switchboard does not use OAuth, and the bearer token sent is valid: send it as Authorization: Bearer <token> with the MCP request itself',
    },
  };
}

/**
 * `checkHost` and `authenticate` are those of /mcp: the host is checked first, as there (a token
 * check answered to any page a browser was lured to would be an oracle for guessing tokens); a
 * token authenticate refuses is invalid, one it passes is valid. Any other failure (the database
 * is down) goes up, to be answered as it is on /mcp.
 */
export function oauthRefusals(checkHost: Middleware, authenticate: Middleware, cliCommand?: string): Middleware {
  const bodies = oauthRefusalBodies(cliCommand);
  const presented = async (ctx: Context): Promise<PresentedToken> => {
    if (bearerToken(ctx) === undefined) return 'none';
    try {
      await authenticate(ctx, () => Promise.resolve());
      return 'valid';
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthenticated') return 'invalid';
      throw err;
    }
  };
  const refuse = compose([
    checkHost,
    async (ctx: Context) => {
      const refusal = bodies[await presented(ctx)];
      ctx.status = 400;
      ctx.body = refusal;
    },
  ]);
  return async (ctx, next) => {
    if (!OAUTH_FALLBACK_PATHS.has(ctx.path)) {
      await next();
      return;
    }
    ctx.set(MCP_SECURITY_HEADERS as Record<string, string>);
    ctx.set('Cache-Control', 'no-store');
    await refuse(ctx, () => Promise.resolve());
  };
}
