import type { Context } from 'koa';
import { payloadTooLarge } from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
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

/**
 * Answers 413 without ever parsing the body, then reads and drops whatever the client is still
 * sending (up to a bound) so the connection can deliver the answer: closing a socket with unread
 * input makes the kernel send a reset, which can destroy the 413 before the client reads it.
 */
export function refuseTooLarge(
  ctx: Context,
  limitBytes: number,
  discardLimitBytes: number,
  discardTimeoutMs: number,
): void {
  const req = ctx.req;
  if (!req.complete) {
    let discarded = 0;
    const stop = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      discarded += chunk.length;
      if (discarded > discardLimitBytes) stop();
    };
    const timer = setTimeout(stop, discardTimeoutMs);
    timer.unref();
    req.on('data', onData);
    req.once('end', () => {
      clearTimeout(timer);
      req.off('data', onData);
    });
    req.once('close', () => clearTimeout(timer));
    req.resume();
  }
  sendError(ctx, payloadTooLarge(limitBytes));
}
