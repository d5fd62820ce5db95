import type { Middleware } from 'koa';

/** Public liveness: says only whether the database answers, never anything about events. */
export function healthRoute(isDatabaseUp: () => Promise<boolean>): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/healthz') return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.body = { error: { code: 'invalid_argument', message: 'method not allowed' } };
      return;
    }
    const up = await isDatabaseUp().catch(() => false);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = up ? 200 : 503;
    ctx.body = { status: up ? 'ok' : 'db down' };
  };
}
