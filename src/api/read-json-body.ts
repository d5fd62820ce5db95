import type { Context } from 'koa';
import { invalidArgument, payloadTooLarge } from '../errors/app-error.ts';
import { readRawBody } from '../http/read-raw-body.ts';

/**
 * Reads a small JSON request body. An empty body is {} (every field of the API's bodies is
 * optional). A body must say it is JSON: a form post from another site cannot pass, on top of
 * the bearer token it cannot send anyway.
 */
export async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) throw payloadTooLarge(limit, { closeConnection: true });
  const result = await readRawBody(ctx.req, limit);
  if (result.kind === 'too_large') throw payloadTooLarge(limit, { closeConnection: true });
  if (result.kind === 'aborted') throw invalidArgument('request body incomplete');
  if (result.body.length === 0) return {};
  if (!ctx.is('application/json')) throw invalidArgument('body: send Content-Type: application/json');
  try {
    return JSON.parse(result.body.toString('utf8')) as unknown;
  } catch {
    throw invalidArgument('body: not valid JSON');
  }
}
