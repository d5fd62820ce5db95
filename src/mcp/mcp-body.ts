/**
 * Reading a POST to /mcp: JSON only, at most the body limit, answered 413 before a byte of an
 * oversized body is parsed (whether or not it declared its length), parsed once here so the SDK
 * transport is handed the finished value.
 */
import type { Context } from 'koa';
import { invalidArgument, payloadTooLarge } from '../errors/app-error.ts';
import { sendError } from '../http/error-response.ts';
import { declaredLength, readRawBody } from '../http/read-raw-body.ts';
import { jsonRpcError } from './http-responses.ts';

export const MCP_MAX_BODY_BYTES = 1024 * 1024;

/** A POST body, parsed; or nothing, when the request has already been answered with why not. */
export type McpBody = { ok: true; body: unknown } | { ok: false };

/** The media type alone, parameters (charset) ignored; a substring match would let `text/plain; x=application/json` through. */
function isJsonContentType(header: string | undefined): boolean {
  return header !== undefined && (header.split(';', 1)[0] ?? '').trim().toLowerCase() === 'application/json';
}

export async function readMcpBody(ctx: Context, maxBodyBytes: number): Promise<McpBody> {
  if (!isJsonContentType(ctx.req.headers['content-type'])) {
    jsonRpcError(ctx, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    return { ok: false };
  }
  const declared = declaredLength(ctx.req);
  if (declared !== undefined && declared > maxBodyBytes) {
    refuseTooLarge(ctx, maxBodyBytes);
    return { ok: false };
  }
  const raw = await readRawBody(ctx.req, maxBodyBytes);
  if (raw.kind === 'too_large') {
    refuseTooLarge(ctx, maxBodyBytes);
    return { ok: false };
  }
  if (raw.kind === 'aborted') {
    sendError(ctx, invalidArgument('request body incomplete'));
    return { ok: false };
  }
  try {
    return { ok: true, body: JSON.parse(raw.body.toString('utf8')) as unknown };
  } catch {
    jsonRpcError(ctx, 400, -32700, 'Parse error: Invalid JSON');
    return { ok: false };
  }
}

/**
 * Answers 413 without ever parsing the body. The rest of an oversized body is not worth reading,
 * so the connection closes after the answer, lingering (http/lingering-close.ts) so the 413 is not
 * lost to a reset while the client is still sending: the same close ingest makes.
 */
function refuseTooLarge(ctx: Context, limitBytes: number): void {
  sendError(ctx, payloadTooLarge(limitBytes, { closeConnection: true }));
}
