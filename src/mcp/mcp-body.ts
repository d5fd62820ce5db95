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

/** Read after an oversized body before the connection is dropped instead. */
const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;
const DISCARD_TIMEOUT_MS = 5_000;

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
 * Answers 413 without ever parsing the body, then reads and drops whatever the client is still
 * sending (up to a bound) so the connection can deliver the answer: closing a socket with unread
 * input makes the kernel send a reset, which can destroy the 413 before the client reads it.
 */
function refuseTooLarge(ctx: Context, limitBytes: number): void {
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
      if (discarded > DISCARD_LIMIT_BYTES) stop();
    };
    const timer = setTimeout(stop, DISCARD_TIMEOUT_MS);
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
