import type { Middleware } from 'koa';
import { methodNotAllowed } from '../errors/app-error.ts';
import { sendError } from './error-response.ts';

/** Public liveness: says only whether the database answers, never anything about events. */
export function healthRoute(isDatabaseUp: () => Promise<boolean>): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/healthz') {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      sendError(ctx, methodNotAllowed(ctx.method, ctx.path, ['GET', 'HEAD']));
      return;
    }
    const up = await isDatabaseUp().catch(() => false);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = up ? 200 : 503;
    ctx.body = { status: up ? 'ok' : 'db down' };
  };
}
