/**
 * Answers for the OAuth endpoints clients look for after a 401. switchboard takes static bearer
 * tokens and runs no authorization server, but MCP clients (Claude Code, mcp-remote, the MCP
 * Inspector, all on the official SDK) meet a 401 by falling back to the MCP authorization spec's
 * default endpoints at the server's origin and registering themselves there (RFC 7591). A 404 in
 * switchboard's envelope is not an OAuth error response, so they report a parse failure or a bare
 * "registration rejected"; an OAuth error response (RFC 7591 §3.2.2, RFC 6749 §5.2) is printed as
 * it stands, and its error_description says what to send instead.
 *
 * Serving protected-resource metadata (RFC 9728) with no authorization servers was tried and
 * changes nothing: the SDK then falls back to the same endpoints (docs/mcp.md, Troubleshooting).
 */
import type { Middleware } from 'koa';
import { BEARER_HINT } from '../auth/require-bearer.ts';
import { MCP_SECURITY_HEADERS } from './http-responses.ts';

/** Registration, authorization and token endpoints, where the SDK's fallback puts them. */
export const OAUTH_FALLBACK_PATHS: ReadonlySet<string> = new Set(['/register', '/authorize', '/token']);

export const OAUTH_REFUSAL = {
  error: 'invalid_request',
  error_description: `switchboard does not use OAuth: ${BEARER_HINT}`,
} as const;

export function oauthRefusals(): Middleware {
  return async (ctx, next) => {
    if (!OAUTH_FALLBACK_PATHS.has(ctx.path)) {
      await next();
      return;
    }
    ctx.set(MCP_SECURITY_HEADERS as Record<string, string>);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 400;
    ctx.body = OAUTH_REFUSAL;
  };
}
