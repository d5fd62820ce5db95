import type { Context } from 'koa';
import { API_SECURITY_HEADERS } from '../http/security-headers.ts';

/**
 * The four headers the contract requires on every /mcp response, from the shared API set (its CSP
 * adds frame-ancestors 'none' to default-src 'none'). Set on the raw response before the SDK
 * transport writes, and Node merges headers set that way into the transport's writeHead.
 */
export const MCP_SECURITY_HEADERS: Readonly<Record<string, string>> = API_SECURITY_HEADERS;

/** JSON-RPC error bodies for failures at the transport level, shaped as the SDK's own. */
export function jsonRpcError(ctx: Context, status: number, code: number, message: string): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
}
